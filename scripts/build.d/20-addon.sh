#!/usr/bin/env bash
# Builds the bpf-loader-native addon (node-gyp, node-addon-api, linked with the system libbpf) that
# src/bpf loads: bpf-loader-native/build/Release/cellium_bpf.node. Needs libbpf-dev (headers); when
# they are missing the step says so in one line and skips: the agent then uses the memory datapath.
# Builds against the machine's Node headers (/usr/include/node) when present (no header download).
# Rebuilds only when a source is newer than the addon.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=bpf-loader-native/build/Release/cellium_bpf.node
if [ ! -f /usr/include/bpf/libbpf.h ]; then
  echo "build: skipping bpf-loader-native: libbpf headers missing (apt-get install libbpf-dev)"
  exit 0
fi
if [ -f "$out" ] && [ -z "$(find bpf-loader-native/src bpf-loader-native/binding.gyp -newer "$out" | head -1)" ]; then
  exit 0
fi
args=(rebuild --directory bpf-loader-native)
if [ -f /usr/include/node/node_api.h ] && [ -z "${npm_config_nodedir:-}" ]; then
  args+=(--nodedir=/usr)
fi
if ! npx --no-install node-gyp "${args[@]}" --loglevel=warn; then
  echo "build: bpf-loader-native failed" >&2
  exit 1
fi
echo "build: $out"
