#!/usr/bin/env bash
# npm run bench: builds, then runs every bench/*.bench.ts (compiled to dist/bench) and prints tables.
# Usage: npm run bench [-- NAME…]  (e.g. npm run bench -- hive policy)
# A bench that fails is named and the others still run; the exit status is 1 when any failed.
# A bench still running after CELLIUM_BENCH_TIMEOUT_S (default 2700 s) is stopped (SIGTERM to it
# and its children, SIGKILL 30 s later) and counted as failed, so one hung bench never stops the
# whole run. Ctrl-C (or SIGTERM) stops the running bench the same way, then the run.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >/dev/null || { echo "bench: setup failed (run: bash scripts/setup.sh)"; exit 1; }
names=("$@")
limit=${CELLIUM_BENCH_TIMEOUT_S:-2700}
failed=()
pid=
trap 'if [ -n "$pid" ]; then kill -TERM "$pid" 2>/dev/null; wait "$pid"; fi; echo "bench: interrupted"; exit 130' INT TERM
for f in dist/bench/*.bench.js; do
  base=$(basename "$f" .bench.js)
  if [ ${#names[@]} -gt 0 ] && [[ ! " ${names[*]} " =~ " ${base} " ]]; then continue; fi
  echo "== bench: $base"
  start=$SECONDS
  # timeout runs the bench in a process group of its own and signals the whole group
  timeout --kill-after=30 "$limit" node --expose-gc "$f" &
  pid=$!
  wait "$pid"
  rc=$?
  pid=
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    echo "== bench: $base FAILED (stopped after ${limit} s: CELLIUM_BENCH_TIMEOUT_S)"; failed+=("$base")
  elif [ $rc -ne 0 ]; then
    echo "== bench: $base FAILED (exit $rc)"; failed+=("$base")
  fi
  echo "== bench: $base took $((SECONDS - start)) s"
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "bench: ${#failed[@]} failed: ${failed[*]}"
  exit 1
fi
