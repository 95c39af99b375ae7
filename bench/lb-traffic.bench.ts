/**
 * The cost of service translation in bpf_lxc: two pod namespaces on veths into a routing "node"
 * namespace (as in datapath-traffic.bench.ts), bpf_lxc with conntrack and policy on both host-side
 * veths (both variants, alternating by round: the node's one shared program, the default, and a
 * copy per endpoint, the previous releases'), and a ClusterIP service whose backend is the server
 * pod. Interleaved, the same client talks to the server straight to its IP and through the VIP:
 * iperf3 TCP throughput (goal: VIP >= 0.95x direct) and TCP connections per second, each a connect
 * and close from a Node loop (goal: VIP >= 0.9x direct), each round's two runs compared with each
 * other; and the kernel's own time in bpf_lxc per packet (BPF run statistics) on either path; and
 * the shared program against the per-endpoint one, round by round; with CELLIUM_BENCH_LXC_BASELINE
 * naming another build of bpf_lxc.o, that build's shared program as a third variant (before/after
 * in one run). Needs root, BPF and iperf3;
 * skips with one line otherwise.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { ensureBpffs } from '../src/bpf/index.js';
import { CtMaps, openIPCacheMap, openLBMaps, type IPCacheMap } from '../src/maps/index.js';
import { LBOps, LBServiceManager } from '../src/cells/loadbalancer/index.js';
import type { PolicyEntry } from '../src/datapath/types.js';
import { podTopology, removeTopology } from './lib/pods.js';
import { BASELINE_OBJECT_ENV, baselineObject, iperfGbps, loadPodPrograms, LXC_VARIANTS, packetBenchMissing, type LxcVariant } from './lib/pod-programs.js';
import { machineLoad, median, printTable, ratio } from './lib/report.js';
import { enableBpfStats, nsPerRun, tcProgramIds } from './lib/bpf-stats.js';

const ROUNDS = 5;
const SECONDS = 3;
const IPERF_PORT = 5201;
const CONN_PORT = 7000;
const id = randomBytes(3).toString('hex');
const NODE = `clbln-${id}`;
const PODS = { client: { ns: `clblc-${id}`, addr: '10.163.0.2', lxc: `lxlc${id}` }, server: { ns: `clbls-${id}`, addr: '10.163.0.3', lxc: `lxls${id}` } };
const GATEWAY = '10.163.0.1';
const VIP = '10.163.96.1';
const ROOT = `/sys/fs/bpf/cellium-bench-lb-${id}`;


function topology(): void {
  podTopology(NODE, Object.values(PODS), GATEWAY);
  // thousands of connections a second leave the client's ports in TIME_WAIT for 60 s: the client
  // reuses them (timestamps keep that safe), else a later round runs out of fresh ports
  execFileSync('ip', ['netns', 'exec', PODS.client.ns, 'sysctl', '-qw', 'net.ipv4.tcp_tw_reuse=1']);
}

function cleanup(): void {
  removeTopology([NODE, PODS.client.ns, PODS.server.ns], ROOT);
}

/** The maps the programs share: conntrack, the ipcache, and the service VIP -> server in the LB maps. */
async function sharedMaps(): Promise<{ ct: CtMaps; ipcache: IPCacheMap; close: () => void }> {
  ensureBpffs(ROOT);
  const ct = CtMaps.open(ROOT, { tcp: 65536, any: 65536 });
  const lb = openLBMaps(ROOT, 65536, 16381);
  const ipcache = openIPCacheMap(ROOT);
  const close = (): void => {
    ct.close();
    lb.close();
    ipcache.close();
  };
  try {
    const mgr = new LBServiceManager();
    for (const port of [IPERF_PORT, CONN_PORT]) {
      mgr.upsert({
        service: { key: `bench/svc-${port}`, name: `svc-${port}`, namespace: 'bench', source: 'k8s', sessionAffinity: false, sessionAffinityTimeoutSec: 0, extTrafficPolicy: 'Cluster', intTrafficPolicy: 'Cluster', sourceRanges: [] },
        frontends: [{ address: { ip: VIP, port, protocol: 'tcp', scope: 'external' }, type: 'ClusterIP' }],
        backends: [{ address: { ip: PODS.server.addr, port, protocol: 'tcp', scope: 'external' }, state: 'active', weight: 100 }],
      });
    }
    const failed = await new LBOps(lb, { algorithm: 'random', maglevTableSize: 16381, maxBackends: 65536 }).update(mgr.frontends.all().map((o) => [o.key, o.value] as const));
    if (failed.size) throw new Error(`LB maps: ${[...failed.values()].map((e) => e.message).join('; ')}`);
    ipcache.setMany([[`${PODS.client.addr}/32`, { identity: 1001, flags: 0 }], [`${PODS.server.addr}/32`, { identity: 1002, flags: 0 }]]);
  } catch (err) {
    close();
    throw err;
  }
  return { ct, ipcache, close };
}

/** The variants a run measures: both of the agent's, and the shared program of another build (BASELINE_OBJECT_ENV) when one is named. */
type Variant = LxcVariant | 'baseline';
const BASELINE = baselineObject();
const VARIANTS: ReadonlyArray<{ variant: Variant; label: string }> = [...LXC_VARIANTS, ...(BASELINE ? [{ variant: 'baseline' as const, label: `shared, baseline build (${BASELINE_OBJECT_ENV})` }] : [])];

/** bpf_lxc (as `variant` says) on both veths, with the shared maps and each pod's policy. */
function attach(maps: { ct: CtMaps; ipcache: IPCacheMap }, variant: Variant): Promise<() => void> {
  const allow = (identity: number, direction: 'ingress' | 'egress', port: number): PolicyEntry => ({ identity, direction, protocol: 6, port, deny: false });
  const which = variant === 'baseline' ? { variant: 'shared' as const, object: BASELINE } : { variant };
  return loadPodPrograms({ node: NODE, root: ROOT, ...maps, ...which }, [
    { pod: PODS.client, policy: [allow(1002, 'egress', IPERF_PORT), allow(1002, 'egress', CONN_PORT)] },
    { pod: PODS.server, policy: [allow(1001, 'ingress', IPERF_PORT), allow(1001, 'ingress', CONN_PORT)] },
  ]);
}

function inNs(ns: string, args: string[]): ChildProcess {
  return spawn('ip', ['netns', 'exec', ns, ...args], { stdio: 'ignore' });
}

const settle = (): Promise<void> => new Promise((r) => setTimeout(r, 500));

/**
 * iperf3's CPU affinity (-A): with two CPUs or more the client and the server each keep one CPU,
 * so both sides of a round run with the same placement (unpinned, the scheduler's placement
 * moved a run's throughput by a third either way on a 2-CPU machine).
 */
const affinity = (cpu: number): string[] => (availableParallelism() >= 2 ? ['-A', String(cpu)] : []);

/** iperf3 TCP throughput from the client to `dst`, Gbit/s. */
async function iperf(dst: string): Promise<number> {
  const s = inNs(PODS.server.ns, ['iperf3', '-s', '-1', '-B', PODS.server.addr, '-p', String(IPERF_PORT), ...affinity(1)]);
  try {
    await settle();
    const out = execFileSync('ip', ['netns', 'exec', PODS.client.ns, 'iperf3', '-c', dst, '-p', String(IPERF_PORT), '-t', String(SECONDS), '-J', ...affinity(0)], { encoding: 'utf8' });
    return iperfGbps(out);
  } finally {
    s.kill('SIGKILL');
  }
}

const CONNECT_LOOP = `const net=require('node:net');const end=Date.now()+${SECONDS * 1000};let n=0;
const one=()=>{if(Date.now()>=end){console.log(n/${SECONDS});return;}const s=net.connect(${CONN_PORT},process.argv[1],()=>{n++;s.destroy();one();});s.on('error',(e)=>{console.error(e.message);process.exit(1);});};one();`;

/** TCP connections per second (connect, then close) from the client to `dst`. */
async function connRate(dst: string): Promise<number> {
  // the client closes first (the server answers its FIN), so TIME_WAIT stays on the client, whose
  // connect() never picks a port still waiting: a server closing first left TIME_WAITs a reused
  // client port ran into (a 1 s SYN retransmit), whichever side of the run came second
  const s = inNs(PODS.server.ns, [process.execPath, '-e', `require('node:net').createServer((c)=>{c.on('error',()=>{});c.resume();c.on('end',()=>c.end());}).listen(${CONN_PORT},'${PODS.server.addr}')`]);
  try {
    await settle();
    const out = execFileSync('ip', ['netns', 'exec', PODS.client.ns, process.execPath, '-e', CONNECT_LOOP, dst], { encoding: 'utf8' });
    return Number(out.trim());
  } finally {
    s.kill('SIGKILL');
  }
}

type Side = 'direct' | 'vip';
type Series = Record<Side, number[]>;
interface Figures { gbps: Series; cps: Series; nsPkt: Series }

/** The middle of `v` with its range, e.g. "1.02x (0.97-1.05x)". */
function spread(v: readonly number[], target?: string): string {
  return `${median(v).toFixed(2)}x (rounds ${Math.min(...v).toFixed(2)}-${Math.max(...v).toFixed(2)}x${target ? `; target ${target}` : ''})`;
}

/** One round of one variant: its programs loaded, then each side's throughput (with ns per packet) and connection rate. */
async function measureRound(maps: { ct: CtMaps; ipcache: IPCacheMap }, variant: Variant, round: number, f: Figures): Promise<void> {
  const detach = await attach(maps, variant);
  try {
    const progs = [...new Set([PODS.client.lxc, PODS.server.lxc].flatMap((dev) => tcProgramIds(NODE, dev)))];
    // the order alternates, so neither side always runs first (after the other's TIME_WAITs)
    const sides: readonly Side[] = round % 2 ? ['vip', 'direct'] : ['direct', 'vip'];
    for (const side of sides) {
      const m = await nsPerRun(progs, () => iperf(side === 'vip' ? VIP : PODS.server.addr));
      f.gbps[side].push(m.value);
      f.nsPkt[side].push(m.nsPerRun);
    }
    for (const side of sides) f.cps[side].push(await connRate(side === 'vip' ? VIP : PODS.server.addr));
  } finally {
    detach();
  }
}

async function main(): Promise<void> {
  const why = packetBenchMissing(['iperf3']);
  if (why) {
    console.log(`lb-traffic: skipped: ${why}`);
    return;
  }
  const empty = (): Figures => ({ gbps: { direct: [], vip: [] }, cps: { direct: [], vip: [] }, nsPkt: { direct: [], vip: [] } });
  const figures = Object.fromEntries(VARIANTS.map(({ variant }) => [variant, empty()])) as Record<Variant, Figures>;
  const loadBefore = machineLoad();
  try {
    topology();
    const maps = await sharedMaps();
    const restoreStats = enableBpfStats();
    try {
      for (let i = 0; i < ROUNDS; i++) {
        // the order rotates, so no variant always runs first
        const order = VARIANTS.map((_, k) => VARIANTS[(k + i) % VARIANTS.length]!);
        for (const { variant } of order) await measureRound(maps, variant, i, figures[variant]);
      }
    } finally {
      restoreStats();
      maps.close();
    }
  } finally {
    cleanup();
  }
  // each round's VIP run is compared with the direct run next to it (the machine's load drifts
  // between rounds more than between the two runs of one round)
  const paired = (s: Series): number[] => s.vip.map((v, i) => v / s.direct[i]!);
  const rows: (string | number)[][] = [];
  for (const { variant, label } of VARIANTS) {
    const f = figures[variant];
    rows.push(
      [`${label}: iperf3 TCP throughput (Gbit/s)`, median(f.gbps.vip), median(f.gbps.direct), spread(paired(f.gbps), '>= 0.95x')],
      [`${label}: TCP connections per second (connect + close)`, median(f.cps.vip), median(f.cps.direct), spread(paired(f.cps), '>= 0.9x')],
      [`${label}: bpf_lxc ns per packet during iperf3 (kernel BPF stats)`, median(f.nsPkt.vip), median(f.nsPkt.direct), ratio(median(f.nsPkt.vip), median(f.nsPkt.direct))],
    );
  }
  const [a, b] = LXC_VARIANTS.map(({ variant }) => figures[variant]);
  const across = (x: Series, y: Series): string => spread(x.vip.map((v, i) => v / y.vip[i]!));
  rows.push(
    ['shared / per-endpoint: iperf3 throughput', across(a!.gbps, b!.gbps), spread(a!.gbps.direct.map((v, i) => v / b!.gbps.direct[i]!)), ''],
    ['shared / per-endpoint: connections per second', across(a!.cps, b!.cps), spread(a!.cps.direct.map((v, i) => v / b!.cps.direct[i]!)), ''],
  );
  if (BASELINE) {
    const c = figures.baseline;
    rows.push(
      ['shared / baseline build: iperf3 throughput', across(a!.gbps, c.gbps), spread(a!.gbps.direct.map((v, i) => v / c.gbps.direct[i]!)), ''],
      ['shared / baseline build: connections per second', across(a!.cps, c.cps), spread(a!.cps.direct.map((v, i) => v / c.cps.direct[i]!)), ''],
    );
  }
  printTable(`pod to pod through bpf_lxc (conntrack + policy on both veths), ${ROUNDS} rounds of ${SECONDS} s, the two bpf_lxc variants alternating: through a ClusterIP VIP vs straight to the backend's IP (medians; VIP / direct is the median of the rounds' ratios); ${loadBefore} before, ${machineLoad()} after`, ['measure', 'through the VIP', "straight to the backend's IP", 'VIP / direct'], rows);
}

await main();
