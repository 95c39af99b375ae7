#!/usr/bin/env bash
# npm run image: builds the container image localhost/cellium:<version> (what deploy/daemonset.yaml
# runs) with podman, offline: no registry is pulled from.
#   1. The base: a minimal Debian rootfs made by mmdebstrap from this machine's apt sources with only
#      the runtime packages below, `podman import`ed as localhost/cellium-base:<key>. Built once per
#      key (the packages, the apt sources, this script's mmdebstrap options).
#   2. The application: `npm pack` (prepack builds), installed globally into a staging prefix with
#      production dependencies only, plus the natives this machine built (both addons, bpf_lxc.o, bpf_sock.o,
#      the CNI shim) and the node binary running this script (Debian's own nodejs is 18).
#   3. `podman build` of Containerfile on top (COPY only, nothing runs inside the build), labelled
#      with the key of all its inputs: a second run with nothing changed stops at step 2's check.
# Prints the image, its size and how long the build took. Needs root, podman and mmdebstrap
# (npm run setup installs them as root). Usage: scripts/image.sh [--print-name]
set -euo pipefail
cd "$(dirname "$0")/.."
version=$(node -p "require('./package.json').version")
image=localhost/cellium:$version
if [ "${1:-}" = --print-name ]; then echo "$image"; exit 0; fi
start=$SECONDS

# Runtime packages of the agent: libstdc++6 for node; libbpf1 (with libelf1, zlib1g) for the BPF
# loader addon; iproute2 so operators can run ip and tc in the container. Nothing else.
packages=(libstdc++6 libbpf1 iproute2)
suite=bookworm
sources=/etc/apt/sources.list.d/debian.sources
[ -f "$sources" ] || sources=/etc/apt/sources.list

fail() { echo "image: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || fail "needs root (podman and mmdebstrap build a rootfs as root)"
command -v podman >/dev/null || fail "podman missing (apt-get install podman, or npm run setup as root)"
command -v mmdebstrap >/dev/null || fail "mmdebstrap missing (apt-get install mmdebstrap, or npm run setup as root)"
[ -f "$sources" ] || fail "no apt sources at /etc/apt/sources.list.d/debian.sources or /etc/apt/sources.list"

work=build/image
mkdir -p "$work"
# One build at a time: tests starting kubelet nodes in parallel each ask for the image, and two
# builds would share $work/pack (one removes the other's tarball). The second waits, then finds the
# image up to date (step 3's label check).
exec 9>"$work/.lock"
flock 9
mmdebstrap_opts=(--variant=essential --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr
  --include="$(IFS=,; echo "${packages[*]}")"
  --aptopt='Acquire::Check-Valid-Until "false"'
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*'
  --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/info/*'
  --dpkgopt='path-exclude=/usr/lib/x86_64-linux-gnu/gconv/*')

# 1. the base, once per key
base_key=$( { printf '%s\n' "$suite" "${mmdebstrap_opts[@]}"; cat "$sources"; } | sha256sum | cut -c1-16)
base=localhost/cellium-base:$base_key
if ! podman image exists "$base"; then
  echo "image: building the base $base from Debian $suite (${packages[*]}) with mmdebstrap"
  rm -f "$work/rootfs.tar"
  if ! mmdebstrap --quiet "${mmdebstrap_opts[@]}" "$suite" "$work/rootfs.tar" "$sources" >"$work/mmdebstrap.log" 2>&1; then
    tail -n 30 "$work/mmdebstrap.log" >&2
    fail "mmdebstrap failed (whole log: $work/mmdebstrap.log); are the apt sources in $sources reachable?"
  fi
  podman import --quiet "$work/rootfs.tar" "$base" >/dev/null
  rm -f "$work/rootfs.tar"
  # older bases (other keys) are no longer used
  podman images --format '{{.Repository}}:{{.Tag}}' | grep '^localhost/cellium-base:' | grep -v ":$base_key\$" | xargs -r podman rmi -f >/dev/null 2>&1 || true
fi

# 2. the application: the package as npm ships it, and the natives of this machine
bash scripts/build.sh
natives=(bpf-loader-native/build/Release/cellium_bpf.node netlink-native/build/Release/cellium_netlink.node build/bpf/bpf_lxc.o build/bpf/bpf_sock.o bin/cellium-cni)
for f in "${natives[@]}"; do
  [ -f "$f" ] || fail "$f is not built: the image needs every native part (npm run setup as root installs clang, libbpf-dev)"
done
rm -rf "$work/pack" && mkdir -p "$work/pack"
tarball=$work/pack/$(npm pack --silent --ignore-scripts --pack-destination "$work/pack" 2>/dev/null | tail -1)
[ -f "$tarball" ] || fail "npm pack did not produce a tarball"
key=$( { echo "$base"; sha256sum "$tarball" Containerfile "${natives[@]}" "$(command -v node)" | cut -d' ' -f1; } | sha256sum | cut -c1-16)
if [ "$(podman image inspect --format '{{index .Labels "io.cellium.inputs"}}' "$image" 2>/dev/null || true)" = "$key" ]; then
  echo "image: $image is up to date (inputs $key)"
  exit 0
fi

echo "image: staging the application (npm install -g of the package, production dependencies only)"
ctx=$work/context
rm -rf "$ctx" && mkdir -p "$ctx"
CELLIUM_SKIP_NATIVE_BUILD=1 npm install --global --prefix "$ctx/cellium" --omit=dev --prefer-offline --no-audit --no-fund --loglevel=error "$tarball" >/dev/null
pkg=$ctx/cellium/lib/node_modules/cellium
for f in "${natives[@]}"; do
  mkdir -p "$pkg/$(dirname "$f")"
  cp "$f" "$pkg/$f"
done
cp "$(node -p process.execPath)" "$ctx/node"

# 3. the image (the one it replaces is removed unless a container still uses it)
old_id=$(podman image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)
podman build --quiet --pull=never --file Containerfile --build-arg "BASE=$base" \
  --label "io.cellium.inputs=$key" --label "org.opencontainers.image.version=$version" \
  --label "org.opencontainers.image.title=cellium" --tag "$image" "$ctx" >/dev/null
rm -rf "$ctx" "$work/pack"
if [ -n "$old_id" ] && [ "$old_id" != "$(podman image inspect --format '{{.Id}}' "$image")" ]; then
  podman rmi "$old_id" >/dev/null 2>&1 || true
fi
size=$(podman image inspect --format '{{.Size}}' "$image")
echo "image: built $image ($((size / 1000000)) MB) in $((SECONDS - start)) s"
