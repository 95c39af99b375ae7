#!/usr/bin/env bash
# Builds the CNI shim (cni-shim/*.c) into bin/cellium-cni: a small C binary with no runtime
# dependencies (statically linked when the C library allows it), so a container runtime can exec it
# cheaply for every CNI call. Rebuilds only when a source is newer than the binary.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=bin/cellium-cni
srcs=(cni-shim/*.c)
if [ -x "$out" ] && [ -z "$(find cni-shim -newer "$out" -name '*.[ch]' | head -1)" ]; then
  exit 0
fi
mkdir -p bin
cc=${CC:-cc}
flags=(-std=c11 -O2 -Wall -Wextra -D_FORTIFY_SOURCE=2 -fstack-protector-strong)
# a temporary name of this build's own: test files run in parallel may build at the same time
tmp="$out.tmp.$$"
trap 'rm -f "$tmp"' EXIT
if ! "$cc" "${flags[@]}" -static -o "$tmp" "${srcs[@]}" 2>/dev/null; then
  "$cc" "${flags[@]}" -o "$tmp" "${srcs[@]}"
fi
strip "$tmp" 2>/dev/null || true
mv -f "$tmp" "$out"
echo "build: $out"
