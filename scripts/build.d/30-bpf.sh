#!/usr/bin/env bash
# Compiles the BPF datapath programs (bpf/*.c) with clang -O2 -g -target bpf into build/bpf/*.o,
# which src/bpf loads (BTF included: .rodata constants are set by name at load). Skipped with one
# line when clang or the libbpf headers are missing (the agent then uses the memory datapath).
# Rebuilds an object only when its source or a header is newer. See scripts/natives.js.
set -euo pipefail
cd "$(dirname "$0")/../.."
node scripts/natives.js bpf
