#!/usr/bin/env node
// cellium-agent launcher: runs the compiled agent (npm run build writes dist/).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const entry = new URL('../dist/src/cmd/agent.js', import.meta.url);
if (!existsSync(fileURLToPath(entry))) {
  process.stderr.write('cellium-agent: not built yet; run `npm run setup` (or `npm run build`) in the cellium directory\n');
  process.exit(1);
}
const { main } = await import(entry.href);
process.exitCode = await main(process.argv.slice(2), process.env);
