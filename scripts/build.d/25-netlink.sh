#!/usr/bin/env bash
# Builds the netlink-native addon (node-gyp, node-addon-api; plain rtnetlink sockets, no library)
# that src/netlink loads: netlink-native/build/Release/cellium_netlink.node, against the running
# node's own headers when they are installed beside it (no header download). See scripts/natives.js.
set -euo pipefail
cd "$(dirname "$0")/../.."
node scripts/natives.js netlink
