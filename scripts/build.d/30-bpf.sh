#!/usr/bin/env bash
# Compiles the BPF datapath programs (bpf/*.c) with clang -O2 -g -target bpf into build/bpf/*.o,
# which src/bpf loads (BTF included: .rodata constants are set by name at load). Skipped with one
# line when clang or the libbpf headers are missing (the agent then uses the memory datapath).
# Rebuilds an object only when its source or a header is newer.
set -euo pipefail
cd "$(dirname "$0")/../.."
clang=${CLANG:-clang}
if ! command -v "$clang" >/dev/null; then
  echo "build: skipping bpf/: clang missing (apt-get install clang)"
  exit 0
fi
if [ ! -f /usr/include/bpf/bpf_helpers.h ]; then
  echo "build: skipping bpf/: libbpf headers missing (apt-get install libbpf-dev)"
  exit 0
fi
mkdir -p build/bpf
arch_inc=/usr/include/$(uname -m)-linux-gnu
for src in bpf/*.c; do
  out=build/bpf/$(basename "$src" .c).o
  if [ -f "$out" ] && [ -z "$(find bpf -newer "$out" -name '*.[ch]' | head -1)" ]; then
    continue
  fi
  "$clang" -O2 -g -target bpf -Wall -Werror -I bpf -I "$arch_inc" -c "$src" -o "$out.tmp"
  mv -f "$out.tmp" "$out"
  echo "build: $out"
done
