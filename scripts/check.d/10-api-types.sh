#!/usr/bin/env bash
# Fails when api/generated/schema.d.ts (committed) no longer matches api/openapi.yaml: regenerates the
# types with openapi-typescript into a temp file and diffs. Fix: regenerate with the command below.
set -euo pipefail
cd "$(dirname "$0")/../.."
spec=api/openapi.yaml
committed=api/generated/schema.d.ts
regen="npx openapi-typescript $spec -o $committed"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "check: API types ($committed) up to date with $spec"
if [ ! -f "$committed" ]; then
  echo "check: $committed is missing; generate it with: $regen" >&2
  exit 1
fi
if ! npx --no-install openapi-typescript "$spec" -o "$tmp/schema.d.ts" >"$tmp/log" 2>&1; then
  cat "$tmp/log" >&2
  echo "check: openapi-typescript failed on $spec" >&2
  exit 1
fi
if ! diff -u "$committed" "$tmp/schema.d.ts" >"$tmp/diff"; then
  head -n 60 "$tmp/diff" >&2
  echo "check: $committed drifted from $spec; regenerate with: $regen (and commit it)" >&2
  exit 1
fi
