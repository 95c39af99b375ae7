/**
 * The kernel's own time in bpf_lxc per packet, measured without traffic: both variants (shared,
 * per-endpoint) loaded on a BPF root of the bench's with the same conntrack, ipcache and policy,
 * and run on crafted IPv4 TCP frames with BPF_PROG_TEST_RUN (many repeats per call, the kernel's
 * mean per run), in alternating rounds. The packets: a pod's established connection leaving it
 * (service lookup, conntrack, ipcache and policy) and the reply coming back (conntrack only). On a
 * shared machine this is the steady figure behind the traffic runs' noisy ones. The shared
 * program's test runs see the loopback's ifindex (1): its cellium_endpoints entry is keyed by it.
 */
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { ensureBpffs } from '../../src/bpf/index.js';
import { CtMaps, openIPCacheMap, openPolicyMap, syncPolicyMap } from '../../src/maps/index.js';
import { loadLxcObject, loadSharedForEndpoint } from '../../src/cells/datapath-bpf/lxc/index.js';
import type { EndpointDatapathConfig } from '../../src/datapath/types.js';
import type { LxcVariant } from './pod-programs.js';
import { median } from './report.js';

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

/** Mean ns per run of each variant, per packet kind: the median over `rounds` alternating rounds. */
export interface RunCost {
  readonly egressEstablished: Record<LxcVariant, number>;
  readonly ingressReply: Record<LxcVariant, number>;
}

/** Runs both variants on the same packets, alternating, `repeat` runs per call; see the file comment. */
export async function lxcRunCost(rounds = 7, repeat = 200_000): Promise<RunCost> {
  const root = `/sys/fs/bpf/cellium-bench-cost-${randomBytes(3).toString('hex')}`;
  ensureBpffs(root);
  const ct = CtMaps.open(root, { tcp: 4096, any: 4096 });
  const ipcache = openIPCacheMap(root);
  const policy = openPolicyMap(root, 7);
  const closers: Array<() => void> = [];
  try {
    ipcache.setMany([[`${POD}/32`, { identity: 4242, flags: 0 }], [`${PEER}/32`, { identity: 4243, flags: 0 }]]);
    syncPolicyMap(policy, [{ identity: 4243, direction: 'egress', protocol: 6, port: 80, deny: false }]);
    const cfg: EndpointDatapathConfig = { id: 7, identity: 4242, ipv4: POD, ifName: 'lo', ifIndex: 1, mac: '', hostMac: '' };
    const lo = { bpfRoot: root, reuseMaps: { ...ct.fds(), cellium_ipcache: ipcache.map.fd, cellium_policy: policy.map.fd } };
    const per = await loadLxcObject(cfg, lo);
    closers.push(() => per.close());
    const { program: shared } = await loadSharedForEndpoint(cfg, lo, false);
    closers.push(() => shared.close());
    const programs: Record<LxcVariant, { testRun(name: 'from_container' | 'to_container', data: Buffer, repeat?: number): { retval: number; durationNs: number } }> = { shared, 'per-endpoint': per };
    // the connection is opened once (its SYN creates the conntrack entry both variants then use)
    const syn = per.testRun('from_container', tcpFrame(POD, PEER, 40000, 80, 0x02));
    if (syn.retval !== 0) throw new Error(`bpf_lxc dropped the connection's SYN (tc verdict ${syn.retval})`);
    const ack = tcpFrame(POD, PEER, 40000, 80, 0x10);
    const reply = tcpFrame(PEER, POD, 80, 40000, 0x10);
    const out = { egress: { shared: [] as number[], 'per-endpoint': [] as number[] }, ingress: { shared: [] as number[], 'per-endpoint': [] as number[] } };
    for (let r = 0; r < rounds; r++) {
      const order: LxcVariant[] = r % 2 ? ['per-endpoint', 'shared'] : ['shared', 'per-endpoint'];
      for (const v of order) {
        const e = programs[v].testRun('from_container', ack, repeat);
        const i = programs[v].testRun('to_container', reply, repeat);
        if (e.retval !== 0 || i.retval !== 0) throw new Error(`${v} bpf_lxc dropped an established packet (tc verdicts ${e.retval}, ${i.retval})`);
        out.egress[v].push(e.durationNs);
        out.ingress[v].push(i.durationNs);
      }
    }
    const med = (s: Record<LxcVariant, number[]>): Record<LxcVariant, number> => ({ shared: median(s.shared), 'per-endpoint': median(s['per-endpoint']) });
    return { egressEstablished: med(out.egress), ingressReply: med(out.ingress) };
  } finally {
    for (const c of closers.reverse()) c();
    ct.close();
    ipcache.close();
    policy.close();
    rmSync(root, { recursive: true, force: true });
  }
}
