#!/usr/bin/env bash
# The unit tier (npm run test:unit, the loop before every commit): every test that needs no root,
# no kernel (BPF, network namespaces) and no server from outside (etcd, a Kubernetes control plane).
# Folders named for what they need are not loaded: test/root-* (root: BPF, namespaces, mounts),
# test/etcd-* (an etcd binary), test/k8s and test/k8s-node (scripts/k8s.sh's control plane; a kubelet), and test/package
# (packs the npm tarball and installs it with npm and node-gyp: two minutes on its own). A test elsewhere that
# needs one of those asks test/needs.ts, which skips it in this tier (CELLIUM_TEST_TIER=unit) for
# every user, root included, so the tier runs the same tests everywhere. npm test runs them all.
set -euo pipefail
cd "$(dirname "$0")/.."
export CELLIUM_TEST_TIER=unit
# the API fuzz test sends 2,000 requests here instead of 10,000 (npm test sends them all)
export CELLIUM_FUZZ_REQUESTS="${CELLIUM_FUZZ_REQUESTS:-2000}"
# the tests that run the agent or the CLI as a process run dist/: built from this checkout first
# (incremental: nothing to do when nothing changed)
bash scripts/build.sh
if [ "$#" -eq 0 ]; then
  set -- --exclude='test/root-*/**' --exclude='test/etcd-*/**' --exclude='test/k8s/**' --exclude='test/k8s-node/**' --exclude='test/package/**' --exclude='**/{dist,fixture,fixtures}/**'
fi
exec bash scripts/tap.sh "$@"
