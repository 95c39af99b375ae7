#!/usr/bin/env node
// The `cellium` CLI launcher: runs the built CLI (npm run build compiles src/ into dist/).
import { runCli } from '../dist/src/cli/main.js';

process.exitCode = await runCli(process.argv.slice(2));
