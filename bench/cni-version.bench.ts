/**
 * CNI exec edge: wall time of `cellium-cni` answering VERSION against the reference Go `bridge`
 * plugin (Debian containernetworking-plugins, /usr/lib/cni/bridge) in the same run, both spawned the
 * same way from Node, interleaved; `/bin/true` is shown for scale. Also the shim's whole
 * forwarding round trip (ADD to an agent on a unix socket that answers at once). Target: VERSION
 * ≤ 1.5x bridge.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cniSuccess, writeCniResponse } from '../src/cni/protocol.js';
import { interleaved, printTable, ratio, sample, stats } from './lib/report.js';

const RUNS = 300;
const BRIDGE = '/usr/lib/cni/bridge';

/** The repository root: the nearest directory above this file holding cni-shim/ (bench or dist/bench). */
function root(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'cni-shim')) && dirname(dir) !== dir) dir = dirname(dir);
  return dir;
}

/** Spawns a program with env and stdin and resolves when it exits (rejecting on a non-zero exit). */
function run(file: string, env: Record<string, string>, stdin: string): Promise<void> {
  return new Promise((ok, fail) => {
    const child = spawn(file, [], { env, stdio: ['pipe', 'ignore', 'ignore'] });
    child.on('error', fail);
    child.on('exit', (code) => (code === 0 ? ok() : fail(new Error(`${file} exited ${code}`))));
    child.stdin.on('error', () => undefined); // a program that ignores stdin (/bin/true) closes it early
    child.stdin.end(stdin);
  });
}

async function main(): Promise<void> {
  const shim = join(root(), 'bin', 'cellium-cni');
  if (!existsSync(shim)) throw new Error(`${shim} missing: run npm run build`);
  const version = { CNI_COMMAND: 'VERSION' };
  const stdin = '{"cniVersion":"1.0.0"}';

  // Interleaved round-robin, so drift of the machine or of Node's JIT hits every program alike.
  const programs: Array<() => Promise<void>> = [() => run('/bin/true', {}, ''), () => run(shim, version, stdin)];
  if (existsSync(BRIDGE)) programs.push(() => run(BRIDGE, version, stdin));
  const samples = await interleaved(RUNS, programs);
  const [floor, ours] = [stats(samples[0]!), stats(samples[1]!)];
  const bridge = samples[2] ? stats(samples[2]) : undefined;

  const dir = mkdtempSync(join(tmpdir(), 'cellium-bench-'));
  const socketPath = join(dir, 'agent.sock');
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => writeCniResponse(res, cniSuccess({ cniVersion: '1.0.0', interfaces: [], ips: [] })));
  });
  await new Promise<void>((ok) => server.listen(socketPath, ok));
  // the shim checks that CNI_NETNS exists and that CNI_PATH is given, as a runtime always passes them
  const addEnv = { CNI_COMMAND: 'ADD', CNI_CONTAINERID: 'bench', CNI_NETNS: '/proc/self/ns/net', CNI_IFNAME: 'eth0', CNI_PATH: '/opt/cni/bin' };
  const netconf = JSON.stringify({ cniVersion: '1.0.0', name: 'cellium', type: 'cellium-cni', 'socket-path': socketPath });
  const forward = stats(await sample(RUNS, () => run(shim, addEnv, netconf)));
  server.close();
  rmSync(dir, { recursive: true, force: true });

  const rows: (string | number)[][] = [
    ['/bin/true (dynamically linked no-op, for scale)', floor.p50Ms, floor.p99Ms, floor.meanMs, ''],
    ['cellium-cni VERSION', ours.p50Ms, ours.p99Ms, ours.meanMs, bridge ? ratio(ours.p50Ms, bridge.p50Ms, '<= 1.5x') : ''],
  ];
  if (bridge) rows.push(['bridge VERSION (baseline)', bridge.p50Ms, bridge.p99Ms, bridge.meanMs, '1.00x']);
  else rows.push([`bridge VERSION: ${BRIDGE} missing (apt-get install containernetworking-plugins)`, NaN, NaN, NaN, '']);
  rows.push(['cellium-cni ADD forwarded to an agent answering at once', forward.p50Ms, forward.p99Ms, forward.meanMs, '']);
  printTable(`CNI plugin exec time, spawned from Node (${RUNS} runs each)`, ['what', 'p50 ms', 'p99 ms', 'mean ms', 'vs bridge (p50)'], rows);
}

await main();
