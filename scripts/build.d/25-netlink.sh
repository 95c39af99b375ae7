#!/usr/bin/env bash
# Builds the netlink-native addon (node-gyp, node-addon-api; plain rtnetlink sockets, no library)
# that src/netlink loads: netlink-native/build/Release/cellium_netlink.node. Builds against the
# machine's Node headers (/usr/include/node) when present, so no header download is needed.
# Rebuilds only when a source is newer than the addon.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=netlink-native/build/Release/cellium_netlink.node
if [ -f "$out" ] && [ -z "$(find netlink-native/src netlink-native/binding.gyp -newer "$out" | head -1)" ]; then
  exit 0
fi
args=(rebuild --directory netlink-native)
if [ -f /usr/include/node/node_api.h ] && [ -z "${npm_config_nodedir:-}" ]; then
  args+=(--nodedir=/usr)
fi
if ! npx --no-install node-gyp "${args[@]}" --loglevel=warn; then
  echo "build: netlink-native failed" >&2
  exit 1
fi
echo "build: $out"
