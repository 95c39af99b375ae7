/**
 * Endpoints on real veths for the BPF datapath benches: `n` veth pairs made with one `ip -batch`
 * (host side in this network namespace, where bpf_lxc attaches; peers in a namespace of the run),
 * the change request the CNI plugin would send for each, and the rules of bench/policy.bench.ts.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import type { EndpointChangeRequest } from '../../src/api/models.js';

/** One endpoint's veth pair. */
export interface Veth {
  readonly name: string;
  readonly ifIndex: number;
  /** The peer's (pod side) MAC. */
  readonly mac: string;
  readonly hostMac: string;
}

/**
 * Creates `n` veth pairs (host side `<prefix><run><i in hex>`, peer `p<i>` in `ns`); `cleanup`
 * receives the steps that remove them (run them last-in first-out).
 */
export function createVeths(cleanup: (what: string, fn: () => unknown) => void, prefix: string, run: string, ns: string, n: number): Veth[] {
  const digits = Math.max(3, (n - 1).toString(16).length);
  const names = Array.from({ length: n }, (_, i) => `${prefix}${run}${i.toString(16).padStart(digits, '0')}`);
  execFileSync('ip', ['netns', 'add', ns]);
  cleanup(`ip netns del ${ns}`, () => execFileSync('ip', ['netns', 'del', ns]));
  cleanup('leftover host-side veths', () => {
    const left = names.filter((name) => existsSync(`/sys/class/net/${name}`));
    if (left.length) execFileSync('ip', ['-batch', '-'], { input: `${left.map((name) => `link del ${name}`).join('\n')}\n` });
  });
  const batch = names.flatMap((name, i) => [`link add ${name} type veth peer name p${i} netns ${ns}`, `link set ${name} up`]);
  execFileSync('ip', ['-batch', '-'], { input: `${batch.join('\n')}\n`, maxBuffer: 64 << 20 });
  const peers = new Map((JSON.parse(execFileSync('ip', ['-n', ns, '-j', 'link', 'show'], { encoding: 'utf8', maxBuffer: 64 << 20 })) as Array<{ ifname: string; address: string }>).map((l) => [l.ifname, l.address]));
  const sys = (name: string, f: string): string => readFileSync(`/sys/class/net/${name}/${f}`, 'utf8').trim();
  return names.map((name, i) => ({ name, ifIndex: Number(sys(name, 'ifindex')), mac: peers.get(`p${i}`)!, hostMac: sys(name, 'address') }));
}

/**
 * The change request the CNI plugin would send for endpoint `i` on `v` (labels: app=client-<i> or
 * svc-<i>, env=prod), its address `<prefix16>.<(i + 10) / 256>.<(i + 10) % 256>`.
 */
export function endpointRequest(run: string, v: Veth, i: number, prefix16: string): EndpointChangeRequest {
  const host = i + 10;
  return {
    'container-id': `dpbench-${run}-${i}`,
    'container-interface-name': 'eth0',
    'interface-name': v.name,
    'interface-index': v.ifIndex,
    mac: v.mac,
    'host-mac': v.hostMac,
    addressing: { ipv4: `${prefix16}.${host >> 8}.${host & 255}` },
    'k8s-pod-name': `pod-${i}`,
    'k8s-namespace': 'default',
    labels: [`k8s:app=${i < 10 ? `client-${i}` : `svc-${i}`}`, 'k8s:env=prod'],
    state: 'waiting-for-identity',
    'sync-build-endpoint': true,
  };
}

/** The rules of bench/policy.bench.ts: every rule selects env=prod (all endpoints); every 25th adds a deny range. */
export function benchRules(n: number): string {
  return JSON.stringify(Array.from({ length: n }, (_, i) => ({
    endpointSelector: { matchLabels: { env: 'prod' } },
    ingress: [{ fromEndpoints: [{ matchLabels: { app: `client-${i % 10}` } }], toPorts: [{ ports: [{ port: String(1000 + i), protocol: 'TCP' }] }] }],
    egress: [{ toEntities: ['world'], toPorts: [{ ports: [{ port: '443', protocol: 'TCP' }] }] }, { toEndpoints: [{ matchLabels: { env: 'prod' } }] }],
    ...(i % 25 === 0 ? { ingressDeny: [{ fromEndpoints: [{ matchLabels: { app: `client-${i % 10}` } }], toPorts: [{ ports: [{ port: String(1000 + i), endPort: 1000 + i + 3, protocol: 'TCP' }] }] }] } : {}),
  })));
}
