#!/usr/bin/env node
// postinstall: applies patches/ (patch-package) to this package's own dependencies. When npm
// hoisted @grpc/grpc-js into the app that depends on Cellium, that copy is the app's: it is left
// as it is (GetFlows then writes one message per HTTP/2 write, docs/cells/hubble.md "Batched
// writes") and one line says so. patch-package would fail the app's install there (it exits 1
// when CI is set and a patched package is not under this package's node_modules).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
if (!existsSync(join(root, 'node_modules', '@grpc', 'grpc-js', 'package.json'))) {
  console.log('cellium (postinstall): @grpc/grpc-js is installed outside this package (hoisted): not patched; Hubble replies are written one message at a time');
  process.exit(0);
}
const bin = join(dirname(createRequire(import.meta.url).resolve('patch-package/package.json')), 'index.js');
const r = spawnSync(process.execPath, [bin], { cwd: root, stdio: 'inherit' });
process.exit(r.status ?? 1);
