#!/usr/bin/env bash
# npm run demo:cluster: three nodes (network namespaces with their own cellium-agent) on one machine
# sharing identities, the ipcache and pod CIDRs through a real etcd (Debian's etcd-server). Root only.
# Sets up the machine (npm deps, build, system packages incl. etcd-server), then runs the story.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" != 0 ]; then
  echo "demo:cluster needs root: it makes network namespaces and a bridge and loads BPF programs (sudo npm run demo:cluster)" >&2
  exit 1
fi
bash scripts/setup.sh
exec node dist/src/cmd/demo/cluster.js "$@"
