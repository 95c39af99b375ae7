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
if ! "$cc" "${flags[@]}" -static -o "$out.tmp" "${srcs[@]}" 2>/dev/null; then
  "$cc" "${flags[@]}" -o "$out.tmp" "${srcs[@]}"
fi
strip "$out.tmp" 2>/dev/null || true
mv -f "$out.tmp" "$out"
echo "build: $out"
