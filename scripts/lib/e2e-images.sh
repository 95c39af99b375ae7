# Sourced by scripts/conformance.sh after scripts/lib/e2e.sh: the images the e2e suites run, built
# offline under exactly the names e2e.test asks for (test/utils/image/manifest.go of the pinned
# release), as docker archives in $E2E_IMAGES, which `npm run k8s -- up --with-kubelet` imports into
# containerd's k8s.io namespace. Nothing is pulled from a registry.
#
#   agnhost  registry.k8s.io/e2e-test-images/agnhost:<tag>: the agnhost binary built by e2e_build
#            (static) on a minimal Debian rootfs (mmdebstrap from this machine's apt sources) with
#            the tools the tests exec in it where upstream's Alpine base has them: sh, nc (OpenBSD's),
#            curl, wget, ip and ss, dig; plus what its Dockerfile adds (/agnhost-2, /uploads, the
#            porter's certificate, user 1000 in group 50000), ENTRYPOINT /agnhost, CMD pause.
#   busybox  registry.k8s.io/e2e-test-images/busybox:<tag>: Debian's busybox-static with its applet
#            links (the framework's default pod image, e2epod.MakePod).
#
# Each archive is rebuilt when its key changes: the inputs (binary, packages, apt sources, this file).

E2E_AGNHOST_PACKAGES=(netcat-openbsd curl wget iproute2 bind9-dnsutils procps)

# The tag of IMAGE ($1) in the pinned release's manifest, e.g. agnhost -> 2.56.
e2e_image_tag() {
  local tag
  tag=$(sed -n "s/.*configs\[[A-Za-z]*\] = Config{list.PromoterE2eRegistry, \"$1\", \"\([^\"]*\)\"}.*/\1/p" \
    "$E2E_SRC/test/utils/image/manifest.go" | head -n1)
  [ -n "$tag" ] || e2e_die "no tag for $1 in $E2E_SRC/test/utils/image/manifest.go (is k8s.io/kubernetes $E2E_VERSION downloaded?)"
  echo "$tag"
}

# Wraps the rootfs directory ROOTFS ($1) into NAME ($2) with podman's --change lines (rest), saves it
# as a docker archive to $E2E_IMAGES/<file>.tar ($3) with its KEY ($4), and drops it from podman.
e2e_image_save() {
  local rootfs=$1 name=$2 file=$3 key=$4
  shift 4
  local changes=() c
  for c in "$@"; do changes+=(--change "$c"); done
  tar -C "$rootfs" --numeric-owner -cf "$rootfs.tar" .
  rm -f "$E2E_IMAGES/$file.tar.tmp"
  if ! podman import --quiet "${changes[@]}" "$rootfs.tar" "$name" >/dev/null ||
    ! podman save --quiet --format docker-archive -o "$E2E_IMAGES/$file.tar.tmp" "$name"; then
    podman rmi --force "$name" >/dev/null 2>&1 || true
    rm -rf "$rootfs" "$rootfs.tar" "$E2E_IMAGES/$file.tar.tmp"
    e2e_die "podman import or save of $name failed (output above)"
  fi
  podman rmi --force "$name" >/dev/null 2>&1 || true
  mv "$E2E_IMAGES/$file.tar.tmp" "$E2E_IMAGES/$file.tar"
  echo "$key" >"$E2E_IMAGES/.$file.key"
  rm -rf "$rootfs" "$rootfs.tar"
  echo "conformance: image $name -> $E2E_IMAGES/$file.tar ($(du -m "$E2E_IMAGES/$file.tar" | cut -f1) MB)"
}

e2e_image_fresh() {
  [ -f "$E2E_IMAGES/$1.tar" ] && [ "$(cat "$E2E_IMAGES/.$1.key" 2>/dev/null)" = "$2" ]
}

e2e_image_agnhost() {
  local tag name sources key work
  tag=$(e2e_image_tag agnhost)
  name=registry.k8s.io/e2e-test-images/agnhost:$tag
  sources=/etc/apt/sources.list.d/debian.sources
  [ -f "$sources" ] || sources=/etc/apt/sources.list
  key=$( { echo "$name"; printf '%s\n' "${E2E_AGNHOST_PACKAGES[@]}"; cat "$sources" "$E2E_BIN/agnhost" \
    "$ROOT/scripts/lib/e2e-images.sh"; } | sha256sum | cut -c1-16)
  if e2e_image_fresh agnhost "$key"; then
    echo "conformance: image $name ready ($E2E_IMAGES/agnhost.tar)"
    return
  fi
  command -v mmdebstrap >/dev/null || e2e_die "mmdebstrap missing (apt-get install mmdebstrap, or npm run setup as root)"
  work="$E2E_IMAGES/agnhost.rootfs.$$"
  rm -rf "$work"
  echo "conformance: building $name (Debian bookworm + ${E2E_AGNHOST_PACKAGES[*]} + agnhost)"
  if ! mmdebstrap --quiet --variant=essential --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
    --include="$(IFS=,; echo "${E2E_AGNHOST_PACKAGES[*]}")" \
    --aptopt='Acquire::Check-Valid-Until "false"' \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    bookworm "$work" "$sources" >"$E2E_IMAGES/agnhost.mmdebstrap.log" 2>&1; then
    tail -n 20 "$E2E_IMAGES/agnhost.mmdebstrap.log" >&2
    rm -rf "$work"
    e2e_die "mmdebstrap of the agnhost rootfs failed (whole log: $E2E_IMAGES/agnhost.mmdebstrap.log)"
  fi
  install -m 755 "$E2E_BIN/agnhost" "$work/agnhost"
  ln -s agnhost "$work/agnhost-2"
  mkdir -p "$work/uploads"
  cp "$E2E_SRC/test/images/agnhost/porter/localhost.crt" "$E2E_SRC/test/images/agnhost/porter/localhost.key" "$work/"
  chmod 644 "$work/localhost.crt" "$work/localhost.key"
  echo 'user-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh' >>"$work/etc/passwd"
  echo 'user-defined-in-image:x:1000:' >>"$work/etc/group"
  echo 'group-defined-in-image:x:50000:user-defined-in-image' >>"$work/etc/group"
  mkdir -p "$work/home/user-defined-in-image"
  chown 1000:1000 "$work/home/user-defined-in-image"
  e2e_image_save "$work" "$name" agnhost "$key" 'ENTRYPOINT ["/agnhost"]' 'CMD ["pause"]' \
    'EXPOSE 80' 'EXPOSE 8080' 'EXPOSE 8081' 'EXPOSE 9376' 'EXPOSE 5000'
}

e2e_image_busybox() {
  local tag name key work bb=/bin/busybox applet
  tag=$(e2e_image_tag busybox)
  name=registry.k8s.io/e2e-test-images/busybox:$tag
  [ -x "$bb" ] && file -L "$bb" | grep -q 'statically linked' ||
    e2e_die "no static /bin/busybox: apt-get install busybox-static"
  key=$( { echo "$name"; cat "$bb" "$ROOT/scripts/lib/e2e-images.sh"; } | sha256sum | cut -c1-16)
  if e2e_image_fresh busybox "$key"; then
    echo "conformance: image $name ready ($E2E_IMAGES/busybox.tar)"
    return
  fi
  work="$E2E_IMAGES/busybox.rootfs.$$"
  rm -rf "$work"
  mkdir -p "$work/bin" "$work/etc" "$work/tmp" "$work/proc" "$work/sys" "$work/dev" "$work/root"
  chmod 1777 "$work/tmp"
  install -m 755 "$bb" "$work/bin/busybox"
  for applet in $("$bb" --list); do
    [ "$applet" = busybox ] || ln -s busybox "$work/bin/$applet"
  done
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' >"$work/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' >"$work/etc/group"
  e2e_image_save "$work" "$name" busybox "$key" 'CMD ["sh"]'
}

# Both archives; needs root, podman and e2e_build's agnhost.
e2e_images() {
  [ "$(id -u)" = 0 ] || e2e_die "building the e2e images needs root (podman, mmdebstrap)"
  command -v podman >/dev/null || e2e_die "podman missing (apt-get install podman, or npm run setup as root)"
  mkdir -p "$E2E_IMAGES"
  exec 7>"$E2E_IMAGES/.build.lock"
  flock 7
  e2e_image_agnhost
  e2e_image_busybox
}
