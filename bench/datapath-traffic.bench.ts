/**
 * Per-packet cost of the BPF datapath, pod to pod: two pod namespaces, each on a veth into a
 * "node" namespace that routes between them (as the CNI plugin plumbs pods). Measured side by side,
 * in rounds that rotate the order: the bare veth pair (no program) against Cellium's bpf_lxc on
 * both host-side veths with conntrack and a policy in force (each pod default-deny both ways except
 * client -> server on the benchmark ports, so every reply passes as a conntrack reply), bpf_lxc
 * both ways the agent runs it: the node's one shared program (the default; the endpoint's
 * constants read per packet from cellium_endpoints) and a copy per endpoint (the previous
 * releases'). iperf3 TCP throughput (goal: >= 0.9x the bare veth), sockperf TCP ping-pong latency,
 * p50 (goal: <= 1.15x), and the kernel's time in bpf_lxc per packet (BPF run statistics). Each
 * ratio is the median of the rounds' ratios (the load of a shared machine drifts between rounds
 * more than within one). Then the two variants' own cost per packet without traffic
 * (lib/lxc-run-cost.ts: BPF_PROG_TEST_RUN on crafted packets), the steady figure under the noise. Needs root, BPF, iperf3 and sockperf (scripts/packages.d/40-bench.txt);
 * skips with one line otherwise.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { ensureBpffs } from '../src/bpf/index.js';
import { CtMaps, openIPCacheMap } from '../src/maps/index.js';
import type { PolicyEntry } from '../src/datapath/types.js';
import { podTopology, removeTopology } from './lib/pods.js';
import { BASELINE_OBJECT_ENV, baselineObject, iperfGbps, loadPodPrograms, LXC_VARIANTS, packetBenchMissing, type LxcVariant } from './lib/pod-programs.js';
import { machineLoad, median, printTable } from './lib/report.js';
import { enableBpfStats, nsPerRun, tcProgramIds } from './lib/bpf-stats.js';
import { lxcRunCost, printRunCost } from './lib/lxc-run-cost.js';

/** Rounds (CELLIUM_BENCH_ROUNDS overrides: more rounds for a steadier latency ratio). */
const ROUNDS = Number(process.env.CELLIUM_BENCH_ROUNDS ?? 5);
const SECONDS = 4;
/** CELLIUM_BENCH_LATENCY_ONLY=1: sockperf only (no iperf3, no BPF statistics), for latency comparisons in more rounds. */
const LATENCY_ONLY = process.env.CELLIUM_BENCH_LATENCY_ONLY === '1';
const IPERF_PORT = 5201;
const SOCKPERF_PORT = 11111;
const id = randomBytes(3).toString('hex');
const NODE = `clbn-${id}`;
const PODS = { client: { ns: `clbc-${id}`, addr: '10.250.0.2', lxc: `lxcc${id}` }, server: { ns: `clbs-${id}`, addr: '10.250.0.3', lxc: `lxcs${id}` } };
const GATEWAY = '10.250.0.1';
const ROOT = `/sys/fs/bpf/cellium-bench-${id}`;


function topology(): void {
  podTopology(NODE, Object.values(PODS), GATEWAY);
}

function cleanup(): void {
  removeTopology([NODE, PODS.client.ns, PODS.server.ns], ROOT);
}

/** bpf_lxc (as `variant` says, from `object` when given) on both host-side veths, with conntrack, the ipcache and each pod's policy. */
async function attachCellium(variant: LxcVariant, object?: string): Promise<() => void> {
  ensureBpffs(ROOT);
  const ct = CtMaps.open(ROOT, { tcp: 65536, any: 65536 });
  const ipcache = openIPCacheMap(ROOT);
  ipcache.setMany([[`${PODS.client.addr}/32`, { identity: 1001, flags: 0 }], [`${PODS.server.addr}/32`, { identity: 1002, flags: 0 }]]);
  const allow = (identity: number, direction: 'ingress' | 'egress', protocol: number, port: number): PolicyEntry => ({ identity, direction, protocol, port, deny: false });
  const policies: Record<'client' | 'server', PolicyEntry[]> = {
    client: [allow(1002, 'egress', 6, IPERF_PORT), allow(1002, 'egress', 6, SOCKPERF_PORT)],
    server: [allow(1001, 'ingress', 6, IPERF_PORT), allow(1001, 'ingress', 6, SOCKPERF_PORT)],
  };
  const unload = await loadPodPrograms({ node: NODE, root: ROOT, ct, ipcache, variant, object }, [
    { pod: PODS.client, policy: policies.client },
    { pod: PODS.server, policy: policies.server },
  ]);
  return () => {
    unload();
    ct.close();
    ipcache.close();
  };
}

function server(args: string[]): ChildProcess {
  return spawn('ip', ['netns', 'exec', PODS.server.ns, ...args], { stdio: 'ignore' });
}

async function settle(): Promise<void> {
  await new Promise((r) => setTimeout(r, 500));
}

/** Runs a client against a server started fresh for it (three tries: the server may not listen yet). */
async function withServer<T>(serverArgs: string[], client: () => T): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const s = server(serverArgs);
    try {
      await settle();
      return client();
    } catch (err) {
      if (attempt >= 3) throw err;
    } finally {
      s.kill('SIGKILL');
    }
  }
}

/**
 * iperf3's CPU affinity (-A): with two CPUs or more the client and the server each keep one CPU,
 * so every setup runs with the same placement (as in lb-traffic.bench.ts: unpinned, the
 * scheduler's placement moved a run's throughput by a third either way on a 2-CPU machine).
 */
const affinity = (cpu: number): string[] => (availableParallelism() >= 2 ? ['-A', String(cpu)] : []);

/** iperf3 TCP throughput client -> server, Gbit/s. */
function iperf(): Promise<number> {
  return withServer(['iperf3', '-s', '-1', '-B', PODS.server.addr, '-p', String(IPERF_PORT), ...affinity(1)], () => {
    const out = execFileSync('ip', ['netns', 'exec', PODS.client.ns, 'iperf3', '-c', PODS.server.addr, '-p', String(IPERF_PORT), '-t', String(SECONDS), '-J', ...affinity(0)], { encoding: 'utf8' });
    return iperfGbps(out);
  });
}

/** sockperf TCP ping-pong client -> server: p50 one-way latency, µs. */
function pingPong(): Promise<number> {
  return withServer(['sockperf', 'server', '--tcp', '-i', PODS.server.addr, '-p', String(SOCKPERF_PORT)], () => {
    const out = execFileSync('ip', ['netns', 'exec', PODS.client.ns, 'sockperf', 'ping-pong', '--tcp', '-i', PODS.server.addr, '-p', String(SOCKPERF_PORT), '-t', String(SECONDS)], { encoding: 'utf8' });
    const m = /percentile 50\.000 =\s+([\d.]+)/.exec(out);
    if (!m) throw new Error(`sockperf printed no p50:\n${out}`);
    return Number(m[1]);
  });
}

/** 'baseline': the shared program from the object BASELINE_OBJECT_ENV names (another build). */
type Setup = 'bare' | LxcVariant | 'baseline';
interface Series { gbps: number[]; p50: number[]; nsPkt: number[] }

/**
 * One round's runs of one setup: throughput (with bpf_lxc's ns per packet meanwhile, the kernel's
 * BPF run statistics on for it only) and latency (statistics off: they add two clock reads per
 * program run, ~30 ns, which the bare veth does not pay).
 */
async function measureRound(setup: Setup, into: Series): Promise<void> {
  const detach = setup === 'bare' ? undefined : setup === 'baseline' ? await attachCellium('shared', baselineObject()) : await attachCellium(setup);
  try {
    if (!LATENCY_ONLY) {
      const progs = setup === 'bare' ? [] : [...new Set([PODS.client.lxc, PODS.server.lxc].flatMap((dev) => tcProgramIds(NODE, dev)))];
      const restoreStats = enableBpfStats();
      let m: { value: number; nsPerRun: number };
      try {
        m = await nsPerRun(progs, iperf);
      } finally {
        restoreStats();
      }
      into.gbps.push(m.value);
      into.nsPkt.push(m.nsPerRun);
    }
    into.p50.push(await pingPong());
  } finally {
    detach?.();
  }
}

/** The median of a measured series, '' when it was not measured (CELLIUM_BENCH_LATENCY_ONLY). */
const med = (v: readonly number[]): number | string => (v.length ? median(v) : '');

/** "0.97x (rounds 0.93-1.01x; target …)": the median of the rounds' ratios and their range. */
function paired(ours: readonly number[], base: readonly number[], target?: string): string {
  if (!ours.length) return ''; // not measured (CELLIUM_BENCH_LATENCY_ONLY)
  const r = ours.map((v, i) => v / base[i]!);
  return `${median(r).toFixed(2)}x (rounds ${Math.min(...r).toFixed(2)}-${Math.max(...r).toFixed(2)}x${target ? `; target ${target}` : ''})`;
}

async function main(): Promise<void> {
  const why = packetBenchMissing(['iperf3', 'sockperf']);
  if (why) {
    console.log(`datapath-traffic: skipped: ${why}`);
    return;
  }
  const baseline = baselineObject();
  const setups: Setup[] = ['bare', ...LXC_VARIANTS.map((v) => v.variant), ...(baseline ? ['baseline' as const] : [])];
  const results = Object.fromEntries(setups.map((s) => [s, { gbps: [], p50: [], nsPkt: [] }])) as unknown as Record<Setup, Series>;
  const loadBefore = machineLoad();
  try {
    topology();
    for (let r = 0; r < ROUNDS; r++) {
      // the order rotates, so no setup always runs first (or right after another's connections)
      for (let k = 0; k < setups.length; k++) await measureRound(setups[(r + k) % setups.length]!, results[setups[(r + k) % setups.length]!]);
    }
  } finally {
    cleanup();
  }
  const bare = results.bare;
  const rows: (string | number)[][] = [['bare veth pair (baseline)', med(bare.gbps), '1.00x', median(bare.p50), '1.00x', '']];
  for (const { variant, label } of LXC_VARIANTS) {
    const v = results[variant];
    rows.push([`${label} + CT + policy`, med(v.gbps), paired(v.gbps, bare.gbps, '>= 0.9x'), median(v.p50), paired(v.p50, bare.p50, '<= 1.15x'), med(v.nsPkt)]);
  }
  const [a, b] = LXC_VARIANTS.map((v) => results[v.variant]);
  const nsRatio = (x: readonly number[], y: readonly number[]): string => (x.length ? `${(median(x) / median(y)).toFixed(2)}x` : '');
  rows.push(['shared / per-endpoint', '', paired(a!.gbps, b!.gbps), '', paired(a!.p50, b!.p50), nsRatio(a!.nsPkt, b!.nsPkt)]);
  if (baseline) {
    const v = results.baseline;
    rows.push([`shared, baseline build (${BASELINE_OBJECT_ENV})`, med(v.gbps), paired(v.gbps, bare.gbps), median(v.p50), paired(v.p50, bare.p50), med(v.nsPkt)]);
    rows.push(['shared / baseline build', '', paired(a!.gbps, v.gbps), '', paired(a!.p50, v.p50), nsRatio(a!.nsPkt, v.nsPkt)]);
  }
  printTable(`pod to pod over veths, ${ROUNDS} rounds of ${SECONDS} s in rotating order (medians; ratios: median of the rounds' ratios), ${loadBefore} before, ${machineLoad()} after`, [
    'setup', 'iperf3 TCP throughput (Gbit/s)', 'vs bare veth', 'sockperf TCP ping-pong latency p50 (µs)', 'vs bare veth', 'bpf_lxc ns per packet during iperf3 (kernel BPF stats)',
  ], rows);
  const cost = await lxcRunCost({ baselineObject: baseline });
  printRunCost(cost, baseline !== undefined);
}

await main();
