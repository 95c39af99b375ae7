#!/usr/bin/env bash
# npm run demo: the README's main job. Sets up the machine (npm deps, build, system packages when
# root), then runs the demo story (dist/src/cmd/demo/main.js) when it is built, else the agent in the foreground.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [ -f dist/src/cmd/demo/main.js ]; then
  exec node dist/src/cmd/demo/main.js "$@"
fi
echo "demo: starting cellium-agent in the foreground (Ctrl-C stops it)"
exec node bin/cellium-agent.js "$@"
