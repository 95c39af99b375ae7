#!/usr/bin/env bash
# Builds every part of Cellium. Each part has its own step in scripts/build.d/ (run in name order),
# so the parts stay independent: TypeScript, the native addon, the BPF objects, the CNI shim.
set -euo pipefail
cd "$(dirname "$0")/.."
for step in scripts/build.d/*.sh; do
  bash "$step"
done
