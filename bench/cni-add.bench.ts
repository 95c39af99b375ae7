/**
 * CNI ADD and DEL through the same client (cnitool, built from shared/e2e/build-cnitool.sh) on bare
 * network namespaces: Cellium (shim -> the `cellium-agent` process, as deployed: its own process,
 * datapath `auto`, logging to a pipe; ADD returns once the endpoint is ready) against the
 * reference bridge + host-local plugins measured in the same run, interleaved. Also 50 concurrent
 * ADDs until all are ready, against 50 concurrent bridge ADDs. Both ways of loading bpf_lxc, each
 * with its own agent and its own bridge baseline in the same run: per-endpoint programs (each ADD
 * verifies a copy) and --bpf-lxc-program=shared (an ADD writes maps and attaches the node's one
 * program). Targets (issue 27, shared): ADD <= 0.3x bridge, 50 concurrent <= 0.5 s and <= 0.3x bridge. Also
 * cnitool running a plugin that does nothing, in the same rounds: the share of every row that is
 * the client's own (process start, configuration, exec of the plugin). The agent runs apart from this process as it does on a node: the runtime that
 * forks the plugins (here this process) is not the agent. Needs root (namespaces, veths); prints
 * why and stops otherwise.
 */
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { installCni } from '../src/cli/commands/install-cni.js';
import { root, scratchBase, startAgent, type AgentProcess } from './lib/agent-process.js';
import { printTable, ratio, stats } from './lib/report.js';

const RUNS = 40;
/** Untimed rounds first: a node's agent has long been running, its hot paths compiled by V8. */
const WARMUP = 20;
const CONCURRENT = 50;
const REF_PLUGINS = '/usr/lib/cni';

/** Runs cnitool; rejects with its stderr on failure. */
function cnitool(tool: string, verb: 'add' | 'del', net: string, ns: string, env: Record<string, string>): Promise<void> {
  return new Promise((ok, fail) => {
    const child = spawn(tool, [verb, net, `/var/run/netns/${ns}`], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    child.on('error', fail);
    child.on('exit', (code) => (code === 0 ? ok() : fail(new Error(`cnitool ${verb} ${net} ${ns}: ${err.trim()}`))));
  });
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

function whyNot(buildScript: string): string | undefined {
  if (process.getuid?.() !== 0) return 'needs root (network namespaces, veth pairs)';
  if (!existsSync(buildScript)) return `needs ${buildScript} to build cnitool`;
  if (!existsSync(join(REF_PLUGINS, 'bridge'))) return `needs ${REF_PLUGINS}/bridge (containernetworking-plugins) as the baseline`;
  if (!existsSync(join(root(), 'bin', 'cellium-cni'))) return 'needs bin/cellium-cni (npm run build)';
  return undefined;
}

type Program = 'per-endpoint' | 'shared';

/** What one agent's run measured, with its bridge baseline. */
interface Measured {
  readonly datapathMode: string;
  readonly s: Record<'addC' | 'addB' | 'delC' | 'delB' | 'coldC' | 'coldB' | 'noop', ReturnType<typeof stats>>;
  readonly burstC: { add: number; del: number };
  readonly burstB: { add: number; del: number };
  readonly ready: number;
}

async function main(): Promise<void> {
  const buildScript = join(root(), '..', 'shared', 'e2e', 'build-cnitool.sh');
  const why = whyNot(buildScript);
  if (why) {
    console.log(`cni-add: skipped: ${why}`);
    return;
  }
  const m: Partial<Record<Program, Measured>> = {};
  for (const program of ['per-endpoint', 'shared'] as const) m[program] = await measure(buildScript, program);
  const pe = m['per-endpoint']!;
  const sh = m.shared!;
  printTable(`CNI ADD / DEL through cnitool on bare namespaces (${RUNS} runs each after ${WARMUP} untimed rounds, interleaved with bridge; Cellium datapath: ${sh.datapathMode}; each agent against its own bridge rounds)`, ['what', 'p50 ms', 'p99 ms', 'mean ms', 'vs bridge (p50)'], [
    ['cellium ADD, --bpf-lxc-program=shared (until the endpoint is ready)', sh.s.addC.p50Ms, sh.s.addC.p99Ms, sh.s.addC.meanMs, ratio(sh.s.addC.p50Ms, sh.s.addB.p50Ms, '<= 0.3x')],
    ['bridge + host-local ADD (baseline of the shared rounds)', sh.s.addB.p50Ms, sh.s.addB.p99Ms, sh.s.addB.meanMs, '1.00x'],
    ['cellium ADD, per-endpoint programs (until ready)', pe.s.addC.p50Ms, pe.s.addC.p99Ms, pe.s.addC.meanMs, ratio(pe.s.addC.p50Ms, pe.s.addB.p50Ms)],
    ['bridge + host-local ADD (baseline of the per-endpoint rounds)', pe.s.addB.p50Ms, pe.s.addB.p99Ms, pe.s.addB.meanMs, '1.00x'],
    [`cellium ADD shared, the ${WARMUP} untimed rounds (agent just started)`, sh.s.coldC.p50Ms, sh.s.coldC.p99Ms, sh.s.coldC.meanMs, ratio(sh.s.coldC.p50Ms, sh.s.coldB.p50Ms)],
    [`cellium ADD per-endpoint, the ${WARMUP} untimed rounds`, pe.s.coldC.p50Ms, pe.s.coldC.p99Ms, pe.s.coldC.meanMs, ratio(pe.s.coldC.p50Ms, pe.s.coldB.p50Ms)],
    ['cellium DEL, shared', sh.s.delC.p50Ms, sh.s.delC.p99Ms, sh.s.delC.meanMs, ratio(sh.s.delC.p50Ms, sh.s.delB.p50Ms)],
    ['cellium DEL, per-endpoint', pe.s.delC.p50Ms, pe.s.delC.p99Ms, pe.s.delC.meanMs, ratio(pe.s.delC.p50Ms, pe.s.delB.p50Ms)],
    ['bridge + host-local DEL (baseline of the shared rounds)', sh.s.delB.p50Ms, sh.s.delB.p99Ms, sh.s.delB.meanMs, '1.00x'],
    ['cnitool ADD of a plugin that does nothing (the client\'s own cost, in the shared rounds)', sh.s.noop.p50Ms, sh.s.noop.p99Ms, sh.s.noop.meanMs, ratio(sh.s.noop.p50Ms, sh.s.addB.p50Ms)],
  ]);
  printTable(`${CONCURRENT} concurrent ADDs until all returned (and ${CONCURRENT} DELs)`, ['what', 'ADD wall ms', 'DEL wall ms', 'vs bridge (ADD)'], [
    [`cellium shared (${sh.ready} endpoints ready when the last ADD returned)`, sh.burstC.add, sh.burstC.del, `${ratio(sh.burstC.add, sh.burstB.add)}; target <= 500 ms and <= 0.3x`],
    ['bridge + host-local (baseline of the shared run)', sh.burstB.add, sh.burstB.del, '1.00x'],
    [`cellium per-endpoint (${pe.ready} ready)`, pe.burstC.add, pe.burstC.del, ratio(pe.burstC.add, pe.burstB.add)],
    ['bridge + host-local (baseline of the per-endpoint run)', pe.burstB.add, pe.burstB.del, '1.00x'],
  ]);
}

/** One agent with `program`, its ADDs and DELs interleaved with bridge's. */
async function measure(buildScript: string, program: Program): Promise<Measured> {
  const tag = randomBytes(2).toString('hex');
  const dir = mkdtempSync(join(scratchBase(), 'cellium-bench-cni-'));
  // pins of its own: the host's /sys/fs/bpf/cellium belongs to a real agent
  const bpfRoot = `/sys/fs/bpf/cellium-bench-${tag}`;
  const namespaces: string[] = [];
  let agent: AgentProcess | undefined;
  try {
    const tool = join(dir, 'cnitool');
    execFileSync('bash', [buildScript, tool], { stdio: ['ignore', 'ignore', 'inherit'] });
    const socketPath = join(dir, 'cellium.sock');
    // The whole agent as src/cells.ts builds it (datapath `auto`: BPF when available).
    agent = await startAgent({ dir, bpfRoot, socketPath, pool: '10.214.0.0/16', flags: { 'bpf-lxc-program': program } });
    const api = agent.client;
    const binDir = join(dir, 'bin');
    const confDir = join(dir, 'net.d');
    await installCni({ binDir, confDir, socketPath, shim: join(root(), 'bin', 'cellium-cni') });
    mkdirSync(join(dir, 'host-local'));
    // the client's own share: cnitool running a plugin that does nothing (a shell script printing a result)
    writeFileSync(join(binDir, 'bench-noop'), '#!/bin/sh\necho \'{"cniVersion":"1.0.0"}\'\n', { mode: 0o755 });
    writeFileSync(join(confDir, '20-bench-noop.conflist'), JSON.stringify({ cniVersion: '1.0.0', name: 'bench-noop', plugins: [{ type: 'bench-noop' }] }));
    writeFileSync(join(confDir, '10-bench-bridge.conflist'), JSON.stringify({
      cniVersion: '1.0.0',
      name: 'bench-bridge',
      plugins: [{ type: 'bridge', bridge: `cbr${tag}`, isGateway: true, ipMasq: false, ipam: { type: 'host-local', dataDir: join(dir, 'host-local'), ranges: [[{ subnet: '10.215.0.0/16' }]] } }],
    }));
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', NETCONFPATH: confDir, CNI_PATH: `${binDir}:${REF_PLUGINS}`, CNI_ARGS: 'IgnoreUnknown=1;K8S_POD_NAMESPACE=bench' };
    const newNs = (kind: string, i: number): string => {
      const name = `cb${tag}-${kind}${i}`;
      execFileSync('ip', ['netns', 'add', name]);
      namespaces.push(name);
      return name;
    };
    // the agent names its datapath in its state message: `cellium <version> (datapath bpf)`
    const datapathMode = /\(datapath (\w+)\)/.exec((await api.status({ brief: true })).cilium?.msg ?? '')?.[1] ?? 'unknown';
    const notReady = async (): Promise<number> => (await api.listEndpoints()).filter((ep) => ep.status.state !== 'ready').length;

    // Sequential, interleaved: cellium ADD, bridge ADD, cellium DEL, bridge DEL; WARMUP rounds first
    // (reported apart: the agent just started).
    const add = { cellium: [] as number[], bridge: [] as number[] };
    const del = { cellium: [] as number[], bridge: [] as number[] };
    const cold = { cellium: [] as number[], bridge: [] as number[] };
    const noop: number[] = [];
    for (let i = -WARMUP; i < RUNS; i++) {
      const c = newNs('c', i + WARMUP);
      const b = newNs('b', i + WARMUP);
      const tc = await timed(() => cnitool(tool, 'add', 'cellium', c, env));
      const tb = await timed(() => cnitool(tool, 'add', 'bench-bridge', b, env));
      if ((await notReady()) > 0) throw new Error('an endpoint was not ready when ADD returned');
      const dc = await timed(() => cnitool(tool, 'del', 'cellium', c, env));
      const db = await timed(() => cnitool(tool, 'del', 'bench-bridge', b, env));
      const tn = await timed(() => cnitool(tool, 'add', 'bench-noop', c, env));
      if (i < 0) {
        cold.cellium.push(tc);
        cold.bridge.push(tb);
      } else {
        add.cellium.push(tc);
        add.bridge.push(tb);
        del.cellium.push(dc);
        del.bridge.push(db);
        noop.push(tn);
      }
    }
    const s = { addC: stats(add.cellium), addB: stats(add.bridge), delC: stats(del.cellium), delB: stats(del.bridge), coldC: stats(cold.cellium), coldB: stats(cold.bridge), noop: stats(noop) };

    // Concurrent: 50 ADDs at once until every one returned (each only once its endpoint is ready).
    let ready = 0;
    const burst = async (net: string, kind: string): Promise<{ add: number; del: number }> => {
      const nss = Array.from({ length: CONCURRENT }, (_, i) => newNs(kind, i));
      const a = await timed(() => Promise.all(nss.map((n) => cnitool(tool, 'add', net, n, env))));
      if (net === 'cellium') ready = (await api.listEndpoints()).filter((ep) => ep.status.state === 'ready').length;
      const d = await timed(() => Promise.all(nss.map((n) => cnitool(tool, 'del', net, n, env))));
      return { add: a, del: d };
    };
    const burstC = await burst('cellium', 'pc');
    const burstB = await burst('bench-bridge', 'pb');

    return { datapathMode: String(datapathMode), s, burstC, burstB, ready };
  } finally {
    await agent?.stop();
    for (const n of namespaces) {
      try {
        execFileSync('ip', ['netns', 'del', n]);
      } catch {
        // already gone
      }
    }
    try {
      execFileSync('ip', ['link', 'del', `cbr${tag}`], { stdio: 'ignore' });
    } catch {
      // no bridge was created
    }
    rmSync(dir, { recursive: true, force: true });
    rmSync(bpfRoot, { recursive: true, force: true });
  }
}

await main();
