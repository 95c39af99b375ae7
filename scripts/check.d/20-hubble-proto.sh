#!/usr/bin/env bash
# Fails when the committed TypeScript of the Hubble wire (src/hubble/gen/) no longer matches
# api/v1/**/*.proto: regenerates it with buf and ts-proto (npm devDependencies) into a temp
# directory and diffs. Fix: regenerate with the command below and commit.
set -euo pipefail
cd "$(dirname "$0")/../.."
regen="npx buf generate api/v1 --template api/v1/buf.gen.yaml"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "check: Hubble wire types (src/hubble/gen) up to date with api/v1/*.proto"
sed "s#out: src/hubble/gen#out: $tmp/gen#" api/v1/buf.gen.yaml >"$tmp/buf.gen.yaml"
if ! npx --no-install buf generate api/v1 --template "$tmp/buf.gen.yaml" >"$tmp/log" 2>&1; then
  cat "$tmp/log" >&2
  echo "check: buf generate failed on api/v1" >&2
  exit 1
fi
if ! diff -ru src/hubble/gen "$tmp/gen" >"$tmp/diff"; then
  head -n 60 "$tmp/diff" >&2
  echo "check: src/hubble/gen drifted from api/v1; regenerate with: $regen (and commit it)" >&2
  exit 1
fi
