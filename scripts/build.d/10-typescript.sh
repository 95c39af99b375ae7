#!/usr/bin/env bash
# Compiles the TypeScript sources to dist/ (what the bin/ entry points run), and puts the generated
# API types (api/generated/schema.d.ts, imported by dist/src/api/models.d.ts) beside them in
# dist/api/generated/, so the published .d.ts are complete. Skips at once when nothing it reads is
# newer than the last build (dist/.build-stamp); else compiles incrementally (dist/.tsbuildinfo).
set -euo pipefail
cd "$(dirname "$0")/../.."
stamp=dist/.build-stamp
inputs=(src bench docs/examples api/generated tsconfig.json tsconfig.build.json package.json)
if [ -f "$stamp" ] && [ -z "$(find "${inputs[@]}" -newer "$stamp" -print -quit 2>/dev/null)" ]; then
  exit 0
fi
npx --no-install tsc -p tsconfig.build.json --incremental --tsBuildInfoFile dist/.tsbuildinfo
mkdir -p dist/api/generated
cp api/generated/schema.d.ts dist/api/generated/schema.d.ts
touch "$stamp"
