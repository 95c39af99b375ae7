# Sourced by scripts/k8s.sh (after it sets CACHE, VERSION, BIN and die): the container images a
# node of the harness runs, built offline (nothing is ever pulled) and written as image archives
# for `ctr -n k8s.io images import`:
#   $CACHE/images/pause-<v>.tar             registry.k8s.io/pause:<v>: build/pause/linux/pause.c of
#                                           the pinned k8s.io/kubernetes module, gcc -static
#   $CACHE/images/cellium-test-busybox.tar  localhost/cellium-test-busybox:<busybox version>: Debian's
#                                           busybox-static (httpd, nc, wget) for the node's tests
#   DIR/node/images/cellium.tar             localhost/cellium:<version>: `npm run image` (scripts/image.sh)
# The cache's archives are rebuilt only when their inputs change (a .<name>.key beside each); every
# *.tar in $CACHE/images is imported by `up --with-kubelet` (other tools put theirs there too).

IMAGES="$CACHE/images"
# The sandbox image kubelet v1.34 and kubeadm name (cmd/kubeadm/app/constants PauseVersion).
PAUSE_VERSION=3.10.1
PAUSE_IMAGE=registry.k8s.io/pause:$PAUSE_VERSION
BUSYBOX_IMAGE_REPO=localhost/cellium-test-busybox

# Wraps the single-layer rootfs tar ROOTFS into the image NAME with ENTRYPOINT, saved as the docker
# archive OUT; the image is removed from podman's storage again (only the archive is kept).
wrap_image() {
  local rootfs=$1 name=$2 entrypoint=$3 out=$4
  podman import --quiet --change "ENTRYPOINT $entrypoint" "$rootfs" "$name" >/dev/null ||
    die "podman import of $rootfs as $name failed"
  rm -f "$out.tmp"
  podman save --quiet --format docker-archive -o "$out.tmp" "$name" || die "podman save of $name failed"
  podman rmi --force "$name" >/dev/null 2>&1 || true
  mv "$out.tmp" "$out"
}

# Runs BUILD (a function writing the archive $2) unless $IMAGES/.NAME.key holds KEY already.
cached_image() {
  local name=$1 key=$2 build=$3 out="$IMAGES/$1.tar"
  if [ -f "$out" ] && [ "$(cat "$IMAGES/.$name.key" 2>/dev/null)" = "$key" ]; then return 0; fi
  mkdir -p "$IMAGES"
  "$build" "$out"
  echo "$key" >"$IMAGES/.$name.key"
  echo "k8s: built $out"
}

build_pause() {
  local out=$1 tmp src
  src=$(pause_source)
  tmp=$(mktemp -d)
  gcc -Os -Wall -static -DVERSION="v$PAUSE_VERSION-cellium" -o "$tmp/pause" "$src" 2>"$tmp/gcc.err" ||
    die "gcc -static of $src failed (libc6-dev provides the static libc): $(cat "$tmp/gcc.err")"
  strip "$tmp/pause"
  tar -C "$tmp" -cf "$tmp/rootfs.tar" pause
  wrap_image "$tmp/rootfs.tar" "$PAUSE_IMAGE" '["/pause"]' "$out"
  rm -rf "$tmp"
}

# pause.c of the pinned module (downloaded by the build into the module cache).
pause_source() {
  local src="$CACHE/gomod/k8s.io/kubernetes@$VERSION/build/pause/linux/pause.c"
  [ -f "$src" ] || die "$src is missing: run npm run k8s -- build (it downloads k8s.io/kubernetes $VERSION)"
  echo "$src"
}

build_busybox() {
  local out=$1 tmp bb
  bb=$(busybox_static)
  tmp=$(mktemp -d)
  mkdir -p "$tmp/rootfs/bin" "$tmp/rootfs/tmp" "$tmp/rootfs/www"
  cp "$bb" "$tmp/rootfs/bin/busybox"
  ln -s busybox "$tmp/rootfs/bin/sh"
  echo ok >"$tmp/rootfs/www/index.html"
  tar -C "$tmp/rootfs" -cf "$tmp/rootfs.tar" .
  wrap_image "$tmp/rootfs.tar" "$(busybox_image)" '["/bin/busybox"]' "$out"
  rm -rf "$tmp"
}

busybox_static() {
  local bb=/bin/busybox
  file -L "$bb" 2>/dev/null | grep -q 'statically linked' ||
    die "$bb is not a static busybox: apt-get install busybox-static (scripts/packages.d/70-k8s-node.txt)"
  echo "$bb"
}

# The test server image's name: tagged with the Debian busybox-static version it carries.
busybox_image() {
  local v
  v=$(dpkg-query -W -f '${Version}' busybox-static 2>/dev/null | tr -c 'A-Za-z0-9_.\n-' '_')
  echo "$BUSYBOX_IMAGE_REPO:${v:-unknown}"
}

# Builds what is missing or stale: the pause and busybox archives in the cache, Cellium's image
# (scripts/image.sh decides whether it is up to date) saved into OUTDIR/cellium.tar.
node_images() {
  local outdir=$1 key image
  key=$( { sha256sum "$(pause_source)" | cut -d' ' -f1; gcc --version | head -n1; echo "$PAUSE_IMAGE"; } | sha256sum | cut -c1-16)
  cached_image "pause-$PAUSE_VERSION" "$key" build_pause
  key=$( { sha256sum "$(busybox_static)" | cut -d' ' -f1; busybox_image; } | sha256sum | cut -c1-16)
  cached_image cellium-test-busybox "$key" build_busybox
  echo "k8s: npm run image (Cellium's image; rebuilt only when its inputs changed)"
  bash "$ROOT/scripts/image.sh" >&2 || die "npm run image failed (output above)"
  image=$(bash "$ROOT/scripts/image.sh" --print-name)
  mkdir -p "$outdir"
  podman save --quiet --format docker-archive -o "$outdir/cellium.tar" "$image" || die "podman save of $image failed"
}
