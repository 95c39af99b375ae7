#!/usr/bin/env bash
# npm run bench: builds, then runs every bench/*.bench.ts (compiled to dist/bench) and prints tables.
# Usage: npm run bench [-- NAME…]  (e.g. npm run bench -- hive policy)
# A bench that fails is named and the others still run; the exit status is 1 when any failed.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >/dev/null || { echo "bench: setup failed (run: bash scripts/setup.sh)"; exit 1; }
names=("$@")
failed=()
for f in dist/bench/*.bench.js; do
  base=$(basename "$f" .bench.js)
  if [ ${#names[@]} -gt 0 ] && [[ ! " ${names[*]} " =~ " ${base} " ]]; then continue; fi
  echo "== bench: $base"
  node --expose-gc "$f" || { rc=$?; echo "== bench: $base FAILED (exit $rc)"; failed+=("$base"); }
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "bench: ${#failed[@]} failed: ${failed[*]}"
  exit 1
fi
