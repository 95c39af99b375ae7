#!/usr/bin/env bash
# The test command (README quick start, CI): set up, type-check, lint, check generated files, run tap.
# Privileged tests run when root (CI is root); otherwise each skips with one line saying why
# (test/needs.ts). tap runs with TMPDIR at a fresh directory that must be empty at the end (scripts/tap.sh).
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
# The Kubernetes tests' binaries (test/k8s/): built here, not in a test file, as a cold build
# outlasts tap's per-file timeout; where Go or its module proxy is missing, one line says why they skip.
echo "test: Kubernetes control-plane binaries (scripts/k8s.sh prepare)"
bash scripts/k8s.sh prepare
# The real hubble CLI (test/root-datapath-agent/hubble.test.ts), cached like the Kubernetes binaries.
echo "test: the hubble CLI (scripts/hubble.sh prepare)"
bash scripts/hubble.sh prepare
# The upstream e2e tests' binary and images (test/conformance/conformance.test.ts), cached likewise.
echo "test: e2e.test and its images (scripts/conformance.sh prepare)"
bash scripts/conformance.sh prepare
echo "test: tap (every tier; npm run test:unit runs the unit tier alone)"
bash scripts/tap.sh "$@"
