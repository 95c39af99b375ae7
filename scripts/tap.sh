#!/usr/bin/env bash
# Runs tap (arguments passed on) with TMPDIR at a fresh directory of its own, and fails when the
# run leaves anything in it: every test makes its temporary files under os.tmpdir() and removes
# them. Other processes on the machine never write there, so the check cannot be made flaky by them.
set -euo pipefail
cd "$(dirname "$0")/.."
base="${TMPDIR:-/tmp}"
run_tmp="$(mktemp -d "$base/cellium-test-XXXXXX")"
chmod 1777 "$run_tmp" # like /tmp: tests that run a process as another user (nobody) make their files here too
# tap generates its test class for the plugins package.json names; "tap.plugin" drops
# @tapjs/typescript (ts-node: it loads the whole compiler into every test process) because
# test/loader runs the TypeScript, from a cache. After npm ci the class still has it: generate it
# once now, as tap would on its first run (which would still load ts-node for that run).
if grep -q 'from "@tapjs/typescript"' node_modules/@tapjs/test/test-built/dist/esm/index.js 2>/dev/null; then
  echo "test: generating tap's test class for package.json's plugins (npx tap build)"
  npx tap build >/dev/null
fi
# the agent's default BPF root: a test that pins there (socket LB links on the machine's root
# cgroup) escaped its own root; absent before the run, it must be absent after it
# tap expands a folder given as an argument to the files of the extensions its plugins declare:
# without its TypeScript plugin, .js only. A folder here becomes the glob of its test files.
args=()
for a in "$@"; do
  if [ -d "$a" ]; then args+=("${a%/}/**/*.test.ts"); else args+=("$a"); fi
done
set -- "${args[@]}"
default_root=/sys/fs/bpf/cellium
had_root=0; [ -e "$default_root" ] && had_root=1
status=0
TMPDIR="$run_tmp" npx tap "$@" || status=$?
if [ "$had_root" = 0 ] && [ -e "$default_root" ]; then
  echo "test: a test pinned under the agent's default BPF root $default_root instead of a root of its own (each test passes --bpf-root); left there:" >&2
  find "$default_root" -maxdepth 2 | sed 's/^/  /' >&2
  [ "$status" != 0 ] || status=1
fi
left="$(find "$run_tmp" -mindepth 1 -maxdepth 1 -printf '%f\n' | sort)"
if [ -n "$left" ]; then
  echo "test: the tests left these in their TMPDIR ($run_tmp); a test did not remove what it made:" >&2
  echo "$left" | sed 's/^/  /' >&2
  [ "$status" != 0 ] || status=1
else
  rmdir "$run_tmp"
fi
exit "$status"
