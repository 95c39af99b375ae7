#!/usr/bin/env bash
# npm run bench: builds, then runs every bench/*.bench.ts (compiled to dist/bench) and prints tables.
# Usage: npm run bench [-- NAME…]  (e.g. npm run bench -- hive policy)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >/dev/null
names=("$@")
for f in dist/bench/*.bench.js; do
  base=$(basename "$f" .bench.js)
  if [ ${#names[@]} -gt 0 ] && [[ ! " ${names[*]} " =~ " ${base} " ]]; then continue; fi
  echo "== bench: $base"
  node --expose-gc "$f"
done
