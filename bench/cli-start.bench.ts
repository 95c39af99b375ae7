/**
 * How long a `cellium` call takes to start: `cellium --version` (the whole CLI loaded, nothing
 * sent) against `node -e 0` in the same run, interleaved, and what loading the etcd client costs
 * (`import('etcd3')`, which the CLI loaded for every command until only `cellium kvstore get` did).
 * The demo makes a dozen CLI calls, and a DaemonSet's readiness probe one per period.
 */
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { existsSync } from 'node:fs';
import { interleaved, printTable, ratio, stats } from './lib/report.js';

const RUNS = 20;

/** The repository root: the nearest directory above this file holding bin/cellium.js (bench or dist/bench). */
function root(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'bin', 'cellium.js')) && dirname(dir) !== dir) dir = dirname(dir);
  return dir;
}

/** Runs node with `args` in the repository root; resolves when it exited 0. */
function node(args: string[]): () => Promise<void> {
  return () => new Promise((ok, fail) => {
    const child = spawn(process.execPath, args, { cwd: root(), stdio: 'ignore' });
    child.on('error', fail);
    child.on('exit', (code) => (code === 0 ? ok() : fail(new Error(`node ${args.join(' ')} exited ${code}`))));
  });
}

async function main(): Promise<void> {
  const [bare, cli, etcd] = (await interleaved(RUNS, [
    node(['-e', '0']),
    node([join(root(), 'bin', 'cellium.js'), '--version']),
    node(['--input-type=module', '-e', "await import('etcd3')"]),
  ])).map(stats) as [ReturnType<typeof stats>, ReturnType<typeof stats>, ReturnType<typeof stats>];
  printTable(`CLI start, spawned from Node (${RUNS} runs each after 10 untimed rounds, interleaved)`, ['what', 'p50 ms', 'p99 ms', 'mean ms', 'vs node -e 0 (p50)'], [
    ['node -e 0 (baseline)', bare.p50Ms, bare.p99Ms, bare.meanMs, '1.00x'],
    ['cellium --version', cli.p50Ms, cli.p99Ms, cli.meanMs, ratio(cli.p50Ms, bare.p50Ms)],
    ["node importing etcd3 (what every call loaded before)", etcd.p50Ms, etcd.p99Ms, etcd.meanMs, ratio(etcd.p50Ms, bare.p50Ms)],
  ]);
}

await main();
