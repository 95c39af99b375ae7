/**
 * Services from Kubernetes into the kernel's LB maps: 1,000 Services × 10 endpoints (one
 * EndpointSlice each) created with kubectl (8 kubectl processes at once, 250 Services and their
 * slices each) on a real control plane (`scripts/k8s.sh up`), the agent (BPF datapath) watching
 * them; measured until every one of them is in the kernel maps with its 10 backends (read from the
 * pinned maps every 50 ms). The figure that matters is the time after the apiserver has them all
 * (the last kubectl returned; goal <= 2 s). Baseline in the same run: the same 1,000 × 10 through
 * `cellium service import` (one manifest file) into the same agent, until in the kernel maps. Then
 * a fresh agent (no state, no maps) started once the apiserver has them all: until in the kernel
 * maps (start, list, cache-sync gate, write). As
 * root with BPF and the Kubernetes binaries built (`npm run k8s -- build`); otherwise it says why.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { bpfAvailable } from '../src/bpf/index.js';
import { openPinnedLBMaps } from '../src/maps/index.js';
import { root, scratchBase, startAgent } from './lib/agent-process.js';
import { printTable, ratio } from './lib/report.js';

const SERVICES = 1000;
const ENDPOINTS = 10;
const KUBECTLS = 8;
const POLL_MS = 50;
const K8S = join(root(), 'scripts', 'k8s.sh');

/** Service i of a run: its ClusterIP in `net` (10.96.x for the apiserver's service CIDR), 10 endpoints. */
function objects(ns: string, net: string, i: number): Record<string, unknown>[] {
  const vip = `${net}.${10 + (i >> 8)}.${i & 255}`;
  const svc = { apiVersion: 'v1', kind: 'Service', metadata: { name: `svc-${i}`, namespace: ns }, spec: { clusterIP: vip, ports: [{ name: 'http', port: 80, targetPort: 8080 }] } };
  const slice = {
    apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', metadata: { name: `svc-${i}-1`, namespace: ns, labels: { 'kubernetes.io/service-name': `svc-${i}` } },
    addressType: 'IPv4', ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
    endpoints: Array.from({ length: ENDPOINTS }, (_, b) => {
      const n = i * ENDPOINTS + b;
      return { addresses: [`10.${200 + (n >> 16)}.${(n >> 8) & 255}.${n & 255}`], conditions: { ready: true } };
    }),
  };
  return [svc, slice];
}

function list(items: Record<string, unknown>[]): string {
  return JSON.stringify({ apiVersion: 'v1', kind: 'List', items });
}

/** How many frontends whose address starts with `prefix` have `ENDPOINTS` backends in the kernel maps. */
function inKernel(bpfRoot: string, prefix: string): number {
  const maps = openPinnedLBMaps(bpfRoot);
  try {
    let n = 0;
    for (const [k, v] of maps.services4.entries()) if (k.slot === 0 && k.port === 80 && v.count === ENDPOINTS && k.address.startsWith(prefix)) n++;
    return n;
  } finally {
    maps.close();
  }
}

/** Resolves with the time (performance.now) at which all SERVICES of `prefix` were in the kernel maps. */
async function untilInKernel(bpfRoot: string, prefix: string, timeoutMs = 120_000): Promise<number> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const n = inKernel(bpfRoot, prefix);
    if (n >= SERVICES) return performance.now();
    if (performance.now() > deadline) throw new Error(`only ${n} of ${SERVICES} services of ${prefix}* in the kernel maps after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

function run(cmd: string, args: readonly string[], env: NodeJS.ProcessEnv): Promise<void> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    p.stderr.on('data', (b: Buffer) => (err += b.toString()));
    p.once('error', reject);
    p.once('close', (code) => (code === 0 ? resolve() : reject(new Error(`${cmd} ${args.join(' ')}: exit ${code}: ${err.slice(-2000)}`))));
  });
}

function skipReason(): string | undefined {
  if (process.getuid?.() !== 0) return 'needs root (the BPF datapath)';
  const avail = bpfAvailable();
  if (!avail.ok) return `BPF unavailable: ${avail.reason ?? ''}`;
  const check = spawnSync('bash', [K8S, 'check'], { encoding: 'utf8' });
  if (check.status !== 0) return `the Kubernetes binaries: ${check.stdout.trim() || check.stderr.trim()} (npm run k8s -- build)`;
  return undefined;
}

async function main(): Promise<void> {
  const why = skipReason();
  if (why) {
    printTable('Services from Kubernetes into the kernel LB maps', ['path', 'result'], [['all', `skipped: ${why}`]]);
    return;
  }
  const base = mkdtempSync(join(scratchBase(), 'cellium-bench-k8s-svc-'));
  const k8sDir = join(base, 'k8s');
  const bpfRoot = `/sys/fs/bpf/cellium-bench-k8s-svc-${process.pid}`;
  const up = spawnSync('bash', [K8S, 'up', '--dir', k8sDir, '--no-build'], { encoding: 'utf8' });
  if (up.status !== 0) throw new Error(`scripts/k8s.sh up: ${up.stderr || up.stdout}`);
  let agent: Awaited<ReturnType<typeof startAgent>> | undefined;
  try {
    const env = { ...process.env, KUBECONFIG: join(k8sDir, 'kubeconfig') };
    const kubectl = join(spawnSync('bash', ['-c', `. ${join(k8sDir, 'env')} && command -v kubectl`], { encoding: 'utf8' }).stdout.trim());
    await run(kubectl, ['create', 'namespace', 'bench'], env);
    const agentRun = {
      dir: join(base, 'agent'), bpfRoot, socketPath: join(base, 'agent', 'cellium.sock'), pool: '10.233.0.0/24',
      flags: { 'k8s-kubeconfig-path': join(k8sDir, 'kubeconfig'), 'k8s-node-name': 'bench-node', 'datapath-mode': 'bpf', 'bpf-lb-sock': false },
    };
    agent = await startAgent(agentRun);
    // the agent's caches synced (the Services it holds are applied only after that): all N of N,
    // however many resources this agent watches (a hard-coded count failed the run once it grew)
    for (let i = 0; ; i++) {
      const st = await agent.client.status();
      if (/\b(\d+)\/\1 resources synced/.test(st.kubernetes?.msg ?? '')) break;
      if (i > 600) throw new Error(`the agent's Kubernetes caches did not sync: ${st.kubernetes?.msg}`);
      await new Promise((r) => setTimeout(r, 100));
    }

    // baseline: cellium service import of the same 1,000 x 10 (another namespace and VIP range)
    const file = join(base, 'import.json');
    writeFileSync(file, list(Array.from({ length: SERVICES }, (_, i) => objects('imp', '10.97', i)).flat()));
    const i0 = performance.now();
    await run(process.execPath, [join(root(), 'bin', 'cellium.js'), '--socket-path', join(base, 'agent', 'cellium.sock'), 'service', 'import', file], process.env);
    const iApplied = performance.now();
    const iKernel = await untilInKernel(bpfRoot, '10.97.');

    // from the apiserver: 8 kubectl processes at once, each 250 Services and their slices
    const files = Array.from({ length: KUBECTLS }, (_, k) => {
      const f = join(base, `k8s-${k}.json`);
      const items: Record<string, unknown>[] = [];
      for (let i = k; i < SERVICES; i += KUBECTLS) items.push(...objects('bench', '10.96', i));
      writeFileSync(f, list(items));
      return f;
    });
    const k0 = performance.now();
    const kernel = untilInKernel(bpfRoot, '10.96.');
    await Promise.all(files.map((f) => run(kubectl, ['create', '-f', f], env)));
    const kApplied = performance.now();
    const kKernel = await kernel;
    const lag = kKernel - kApplied;

    // a fresh agent (no state, empty maps) started once the apiserver has them all: list, sync, write
    await agent.stop();
    agent = undefined;
    rmSync(bpfRoot, { recursive: true, force: true });
    const c0 = performance.now();
    agent = await startAgent({ ...agentRun, dir: join(base, 'agent2'), socketPath: join(base, 'agent2', 'cellium.sock') });
    const cUp = performance.now();
    const cKernel = await untilInKernel(bpfRoot, '10.96.');
    const s = (ms: number): string => (ms / 1000).toFixed(2);
    printTable(`Services from Kubernetes: ${SERVICES.toLocaleString('en-US')} Services x ${ENDPOINTS} endpoints until every one is in the kernel LB maps (polled every ${POLL_MS} ms)`,
      ['path', 'applied (s)', 'in kernel maps from start (s)', 'after applied (s)', 'vs import'],
      [
        ['cellium service import (baseline)', s(iApplied - i0), s(iKernel - i0), s(iKernel - iApplied), '1.00x'],
        [`kubectl create, ${KUBECTLS} at once -> apiserver -> agent`, s(kApplied - k0), s(kKernel - k0), s(lag), ratio(kKernel - k0, iKernel - i0)],
        ['fresh agent started once the apiserver has them (start -> API up -> listed, synced, written)', s(cUp - c0), s(cKernel - c0), s(cKernel - cUp), ratio(cKernel - c0, iKernel - i0)],
      ]);
    console.log(`load average during the run: ${loadavg().map((x) => x.toFixed(1)).join(' ')} on ${cpus().length} CPUs`);
    console.log(`after the apiserver had them all: ${s(lag)} s until the last was in the kernel maps (goal <= 2 s; negative: the agent had written them before the last kubectl exited)`);
  } finally {
    await agent?.stop();
    spawnSync('bash', [K8S, 'down', '--dir', k8sDir], { stdio: 'ignore' });
    rmSync(bpfRoot, { recursive: true, force: true });
    rmSync(base, { recursive: true, force: true });
  }
}

await main();
