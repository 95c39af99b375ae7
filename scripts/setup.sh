#!/usr/bin/env bash
# Installs whatever a fresh machine lacks to build and run Cellium, then builds it.
#   - system packages through apt (only as root), each named with the reason it is needed;
#   - npm dependencies (npm ci) when node_modules is missing or older than package-lock.json;
#   - the build (scripts/build.sh): TypeScript, the native addon, the BPF objects, the CNI shim.
# Idempotent: a second run on a set-up machine installs nothing and rebuilds only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

# Packages come from scripts/packages.d/*.txt: "<package> <why>" per line, # for comments.
declare -A WHY=()
while read -r pkg why; do
  [ -n "$pkg" ] && [ "${pkg:0:1}" != "#" ] && WHY[$pkg]="$why"
done < <(cat scripts/packages.d/*.txt)
missing=()
for pkg in "${!WHY[@]}"; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    for pkg in "${missing[@]}"; do echo "setup: installing $pkg: ${WHY[$pkg]}"; done
    apt-get update -qq >/dev/null 2>&1 || true
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "setup: not root, so not installing ${missing[*]}: the BPF datapath and privileged tests need them (run as root once to install)"
  fi
fi

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "setup: installing npm dependencies (npm ci)"
  npm ci --no-audit --no-fund --loglevel=error
fi

bash scripts/build.sh
