/**
 * Per-packet cost of the BPF datapath, pod to pod: two pod namespaces, each on a veth into a
 * "node" namespace that routes between them (as the CNI plugin plumbs pods). Measured side by side,
 * interleaved: the bare veth pair (no program) against Cellium's bpf_lxc on both host-side veths
 * with conntrack and a policy in force (each pod default-deny both ways except client -> server on
 * the benchmark ports, so every reply passes as a conntrack reply). iperf3 TCP throughput (goal:
 * >= 0.9x the bare veth) and sockperf TCP ping-pong latency, p50 (goal: <= 1.15x). Needs root,
 * BPF, iperf3 and sockperf (scripts/packages.d/40-bench.txt); skips with one line otherwise.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { ensureBpffs } from '../src/bpf/index.js';
import { CtMaps, openIPCacheMap } from '../src/maps/index.js';
import type { PolicyEntry } from '../src/datapath/types.js';
import { podTopology, removeTopology } from './lib/pods.js';
import { iperfGbps, loadPodPrograms, packetBenchMissing } from './lib/pod-programs.js';
import { median, printTable, ratio } from './lib/report.js';

const ROUNDS = 3;
const SECONDS = 4;
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

/** bpf_lxc on both host-side veths, with conntrack, the ipcache and each pod's policy. */
async function attachCellium(): Promise<() => void> {
  ensureBpffs(ROOT);
  const ct = CtMaps.open(ROOT, { tcp: 65536, any: 65536 });
  const ipcache = openIPCacheMap(ROOT);
  ipcache.setMany([[`${PODS.client.addr}/32`, { identity: 1001, flags: 0 }], [`${PODS.server.addr}/32`, { identity: 1002, flags: 0 }]]);
  const allow = (identity: number, direction: 'ingress' | 'egress', protocol: number, port: number): PolicyEntry => ({ identity, direction, protocol, port, deny: false });
  const policies: Record<'client' | 'server', PolicyEntry[]> = {
    client: [allow(1002, 'egress', 6, IPERF_PORT), allow(1002, 'egress', 6, SOCKPERF_PORT)],
    server: [allow(1001, 'ingress', 6, IPERF_PORT), allow(1001, 'ingress', 6, SOCKPERF_PORT)],
  };
  const unload = await loadPodPrograms({ node: NODE, root: ROOT, ct, ipcache }, [
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

/** iperf3 TCP throughput client -> server, Gbit/s. */
function iperf(): Promise<number> {
  return withServer(['iperf3', '-s', '-1', '-B', PODS.server.addr, '-p', String(IPERF_PORT)], () => {
    const out = execFileSync('ip', ['netns', 'exec', PODS.client.ns, 'iperf3', '-c', PODS.server.addr, '-p', String(IPERF_PORT), '-t', String(SECONDS), '-J'], { encoding: 'utf8' });
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

async function main(): Promise<void> {
  const why = packetBenchMissing(['iperf3', 'sockperf']);
  if (why) {
    console.log(`datapath-traffic: skipped: ${why}`);
    return;
  }
  const results = { bare: { gbps: [] as number[], p50: [] as number[] }, cellium: { gbps: [] as number[], p50: [] as number[] } };
  try {
    topology();
    for (let r = 0; r < ROUNDS; r++) {
      results.bare.gbps.push(await iperf());
      results.bare.p50.push(await pingPong());
      const detach = await attachCellium();
      try {
        results.cellium.gbps.push(await iperf());
        results.cellium.p50.push(await pingPong());
      } finally {
        detach();
      }
    }
  } finally {
    cleanup();
  }
  const bare = { gbps: median(results.bare.gbps), p50: median(results.bare.p50) };
  const ours = { gbps: median(results.cellium.gbps), p50: median(results.cellium.p50) };
  printTable(`pod to pod over veths, median of ${ROUNDS} interleaved rounds of ${SECONDS} s: bpf_lxc with conntrack and a default-deny-both-ways policy vs the bare veth pair`, ['measure', 'cellium (bpf_lxc + CT + policy)', 'bare veth', 'cellium / bare'], [
    ['iperf3 TCP throughput (Gbit/s)', ours.gbps, bare.gbps, ratio(ours.gbps, bare.gbps, '>= 0.9x')],
    ['sockperf TCP ping-pong latency p50 (µs)', ours.p50, bare.p50, ratio(ours.p50, bare.p50, '<= 1.15x')],
  ]);
}

await main();
