#!/usr/bin/env bash
# Builds the bpf-loader-native addon (node-gyp, node-addon-api, linked with the system libbpf) that
# src/bpf loads: bpf-loader-native/build/Release/cellium_bpf.node. Needs libbpf-dev (headers); when
# they are missing the step says so in one line and skips: the agent then uses the memory datapath.
# The same code builds it when the npm package is installed (scripts/natives.js, one place).
set -euo pipefail
cd "$(dirname "$0")/../.."
node scripts/natives.js bpf-loader
