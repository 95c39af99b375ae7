#!/usr/bin/env bash
# Compiles the TypeScript sources to dist/ (what the bin/ entry points run).
set -euo pipefail
cd "$(dirname "$0")/../.."
npx tsc -p tsconfig.build.json
