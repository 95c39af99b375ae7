#!/usr/bin/env bash
# Builds the CNI shim (cni-shim/*.c) into bin/cellium-cni: a small C binary with no runtime
# dependencies (statically linked when the C library allows it), so a container runtime can exec it
# cheaply for every CNI call. Rebuilds only when a source is newer; each build writes a temporary
# file of its own (test files running in parallel may build at once). See scripts/natives.js.
set -euo pipefail
cd "$(dirname "$0")/../.."
node scripts/natives.js shim
