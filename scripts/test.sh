#!/usr/bin/env bash
# The test command (README quick start, CI): set up, type-check, lint, check generated files, run tap.
# Privileged tests run when root (CI is root); otherwise each skips with one line saying why.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
echo "test: type-check (tsc --noEmit)"
npx tsc --noEmit -p tsconfig.json
echo "test: lint (eslint)"
npx eslint .
for check in scripts/check.d/*.sh; do
  [ -e "$check" ] || continue
  bash "$check"
done
echo "test: tap"
npx tap "$@"
