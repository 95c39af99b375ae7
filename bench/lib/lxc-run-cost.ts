/**
 * The kernel's own time in bpf_lxc per packet, measured without traffic: both variants (shared,
 * per-endpoint) loaded on a BPF root of the bench's with the same conntrack, ipcache and policy,
 * and run on crafted IPv4 TCP frames with BPF_PROG_TEST_RUN (many repeats per call, the kernel's
 * mean per run), in alternating rounds. The packets: a pod's established connection leaving it
 * (service lookup, conntrack, ipcache and policy) and the reply coming back (conntrack only), and
 * the server side of a connection to the pod (the request in, the reply out). On a
 * shared machine this is the steady figure behind the traffic runs' noisy ones. The shared
 * program's test runs see the loopback's ifindex (1): its cellium_endpoints entry is keyed by it.
 */
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { ensureBpffs } from '../../src/bpf/index.js';
import { CtMaps, openIPCacheMap, openPolicyMap, syncPolicyMap } from '../../src/maps/index.js';
import { loadLxcObject, loadSharedForEndpoint } from '../../src/cells/datapath-bpf/lxc/index.js';
import type { EndpointDatapathConfig } from '../../src/datapath/types.js';
import { machineLoad, median, printTable } from './report.js';

const POD = '10.0.0.2';
const PEER = '10.0.0.3';

/** An Ethernet frame of an IPv4 TCP segment (checksums 0: bpf_lxc does not check them), padded to 60 bytes. */
export function tcpFrame(src: string, dst: string, sport: number, dport: number, flags: number): Buffer {
  const f = Buffer.alloc(14 + 20 + 20);
  f.writeUInt16BE(0x0800, 12);
  f[14] = 0x45;
  f.writeUInt16BE(40, 16);
  f[22] = 64;
  f[23] = 6;
  Buffer.from(src.split('.').map(Number)).copy(f, 26);
  Buffer.from(dst.split('.').map(Number)).copy(f, 30);
  f.writeUInt16BE(sport, 34);
  f.writeUInt16BE(dport, 36);
  f.writeUInt32BE(1, 38);
  f[46] = 5 << 4;
  f[47] = flags;
  f.writeUInt16BE(65535, 48);
  return Buffer.concat([f, Buffer.alloc(6)]);
}

/**
 * Mean ns per run of each program, per packet kind: the median over `rounds` alternating rounds.
 * The pod is the client of one connection (its request leaving, the reply coming in) and the
 * server of another (the request coming in, its reply leaving): the four runs of a round trip.
 * Keys: 'shared', 'per-endpoint', and 'baseline' when a baseline object was given.
 */
export type CostOf = Record<string, number>;

/** See {@link CostOf}. */
export interface RunCost {
  readonly egressEstablished: CostOf;
  readonly ingressReply: CostOf;
  readonly ingressEstablished: CostOf;
  readonly egressReply: CostOf;
  /** The sum of the four kinds' medians. */
  readonly roundTrip: CostOf;
}

/** The packets measured: which program runs on which frame. */
const KINDS = {
  egressEstablished: ['from_container', tcpFrame(POD, PEER, 40000, 80, 0x10)],
  ingressReply: ['to_container', tcpFrame(PEER, POD, 80, 40000, 0x10)],
  ingressEstablished: ['to_container', tcpFrame(PEER, POD, 50000, 8080, 0x10)],
  egressReply: ['from_container', tcpFrame(POD, PEER, 8080, 50000, 0x10)],
} as const;
type Kind = keyof typeof KINDS;

type TestRunner = { testRun(name: 'from_container' | 'to_container', data: Buffer, repeat?: number): { retval: number; durationNs: number } };

/** Options of {@link lxcRunCost}. */
export interface RunCostOptions {
  readonly rounds?: number;
  readonly repeat?: number;
  /**
   * Another build of bpf_lxc.o (e.g. the main branch's) loaded as the shared program beside the
   * current one, for a before/after figure taken in the same run ('baseline').
   */
  readonly baselineObject?: string;
  /** More builds to load as the shared program, by the key their figures get. */
  readonly objects?: Readonly<Record<string, string>>;
}

/** Runs the programs on the same packets, alternating, `repeat` runs per call; see the file comment. */
export async function lxcRunCost(o: RunCostOptions = {}): Promise<RunCost> {
  const rounds = o.rounds ?? 7;
  const repeat = o.repeat ?? 200_000;
  const root = `/sys/fs/bpf/cellium-bench-cost-${randomBytes(3).toString('hex')}`;
  ensureBpffs(root);
  const ct = CtMaps.open(root, { tcp: 4096, any: 4096 });
  const ipcache = openIPCacheMap(root);
  const policy = openPolicyMap(root, 7);
  const closers: Array<() => void> = [];
  try {
    ipcache.setMany([[`${POD}/32`, { identity: 4242, flags: 0 }], [`${PEER}/32`, { identity: 4243, flags: 0 }]]);
    syncPolicyMap(policy, [{ identity: 4243, direction: 'egress', protocol: 6, port: 80, deny: false }, { identity: 4243, direction: 'ingress', protocol: 6, port: 8080, deny: false }]);
    const cfg: EndpointDatapathConfig = { id: 7, identity: 4242, ipv4: POD, ifName: 'lo', ifIndex: 1, mac: '', hostMac: '' };
    const lo = { bpfRoot: root, reuseMaps: { ...ct.fds(), cellium_ipcache: ipcache.map.fd, cellium_policy: policy.map.fd } };
    const per = await loadLxcObject(cfg, lo);
    closers.push(() => per.close());
    const { program: shared } = await loadSharedForEndpoint(cfg, lo, false);
    closers.push(() => shared.close());
    const programs: Record<string, TestRunner> = { shared, 'per-endpoint': per };
    const objects = { ...(o.baselineObject ? { baseline: o.baselineObject } : {}), ...o.objects };
    for (const [name, object] of Object.entries(objects)) {
      // the same maps (its cellium_endpoints entry is the one the current build's load wrote)
      const { program } = await loadSharedForEndpoint(cfg, { ...lo, object }, false);
      closers.push(() => program.close());
      programs[name] = program;
    }
    const names = Object.keys(programs);
    // the connections are opened once (their SYNs create the conntrack entries every program then uses)
    const syns = [per.testRun('from_container', tcpFrame(POD, PEER, 40000, 80, 0x02)), per.testRun('to_container', tcpFrame(PEER, POD, 50000, 8080, 0x02))];
    if (syns.some((s) => s.retval !== 0)) throw new Error(`bpf_lxc dropped a connection's SYN (tc verdicts ${syns.map((s) => s.retval).join(', ')})`);
    const kinds = Object.keys(KINDS) as Kind[];
    const out = Object.fromEntries(kinds.map((k) => [k, Object.fromEntries(names.map((n) => [n, [] as number[]]))])) as Record<Kind, Record<string, number[]>>;
    for (let r = 0; r < rounds; r++) {
      // each round starts with another program, so none always runs first
      const order = names.map((_, i) => names[(i + r) % names.length]!);
      for (const v of order) {
        for (const k of kinds) {
          const [prog, frame] = KINDS[k];
          const run = programs[v]!.testRun(prog, frame, repeat);
          if (run.retval !== 0) throw new Error(`${v} bpf_lxc dropped an established packet (${k}: tc verdict ${run.retval})`);
          out[k][v]!.push(run.durationNs);
        }
      }
    }
    const med = (s: Record<string, number[]>): CostOf => Object.fromEntries(names.map((n) => [n, median(s[n]!)]));
    const m = Object.fromEntries(kinds.map((k) => [k, med(out[k])])) as Record<Kind, CostOf>;
    const sum = (v: string): number => kinds.reduce((a, k) => a + m[k][v]!, 0);
    return { ...m, roundTrip: Object.fromEntries(names.map((n) => [n, sum(n)])) };
  } finally {
    for (const c of closers.reverse()) c();
    ct.close();
    ipcache.close();
    policy.close();
    rmSync(root, { recursive: true, force: true });
  }
}

/** The BPF_PROG_TEST_RUN table (with the baseline build's column when there is one). */
export function printRunCost(cost: RunCost, withBaseline: boolean, rounds = 7): void {
  const vs = (a: number, b: number): string => `${(a / b).toFixed(2)}x (${a >= b ? '+' : ''}${(a - b).toFixed(0)} ns)`;
  const costRow = (what: string, c: CostOf): (string | number)[] => [what, c.shared!, c['per-endpoint']!, vs(c.shared!, c['per-endpoint']!), ...(withBaseline ? [c.baseline!, vs(c.shared!, c.baseline!)] : [])];
  printTable(`bpf_lxc's own time per packet without traffic (BPF_PROG_TEST_RUN on crafted IPv4 TCP frames, 200,000 runs a call, median of ${rounds} alternating rounds; ${machineLoad()})`, ['packet', 'shared (ns)', 'per-endpoint (ns)', 'shared / per-endpoint', ...(withBaseline ? [`shared, baseline build (ns)`, 'shared / baseline build'] : [])], [
    costRow('client: established, leaving the pod (service lookup, conntrack, ipcache, policy)', cost.egressEstablished),
    costRow('client: reply, to the pod (conntrack)', cost.ingressReply),
    costRow('server: established, to the pod (conntrack, ipcache, policy)', cost.ingressEstablished),
    costRow('server: reply, leaving the pod (service lookup, conntrack)', cost.egressReply),
    costRow('one request/response round trip (the four above)', cost.roundTrip),
  ]);
}
