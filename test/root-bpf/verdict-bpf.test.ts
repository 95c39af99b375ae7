// The shared verdict case table against the real bpf_lxc program with real packets (root): one
// endpoint veth, the program loaded once, and per case the ipcache and policy maps written, then
// a ping, TCP connect or UDP datagram sent in the case's direction. A case passes when the packet
// got through exactly when expected, and a drop counted the expected reason. Replies travel the
// other direction, so the opposite direction's entries are replaced by an allow-all (they do not
// take part in the case's verdict). Cases that need packets these tools cannot send (ARP, neighbour
// discovery, non-echo ICMP) are covered by the model test only. Every case runs against both ways of
// loading bpf_lxc: the endpoint's own copy, and the node's shared program (constants from
// cellium_endpoints, the policy map through cellium_policy_maps).
import t from 'tap';
import { openIPCacheMap, openPolicyMap, readDropCounters, syncPolicyMap, type IPCacheMap } from '../../src/maps/index.js';
import { kernelVerdict, loadEndpointProgram, loadSharedForEndpoint, unloadEndpointProgram, unloadSharedEndpoint } from '../../src/cells/datapath-bpf/lxc/index.js';
import type { PolicyEntry } from '../../src/datapath/types.js';
import { TOPOLOGY, verdictCases, type VerdictCase } from '../fixtures/verdict-cases.js';
import { createTopology, exchange, ping, skipUnlessBpf, testBpfRoot, type Topology } from '../bpf/fixtures/topology.js';

const skip = skipUnlessBpf();

/** How a case's packet is sent, or undefined when ping/TCP/UDP cannot express it. */
function probeKind(c: VerdictCase): 'tcp' | 'udp' | 'ping' | undefined {
  const p = c.packet;
  if (p.arp) return undefined;
  if ((p.protocol === 6 || p.protocol === 17) && p.dport > 0) return p.protocol === 6 ? 'tcp' : 'udp';
  if (p.protocol === 1 && (p.icmpType ?? 8) === 8) return 'ping';
  if (p.protocol === 58 && (p.icmpType ?? 128) === 128) return 'ping';
  return undefined;
}

function syncIPCache(m: IPCacheMap, c: VerdictCase): void {
  const want = new Map(c.ipcache.map((e) => [e.cidr, e.identity]));
  for (const [cidr] of m.entries()) if (!want.has(cidr)) m.delete(cidr);
  m.setMany([...want].map(([cidr, identity]) => [cidr, { identity, flags: 0 }]));
}

async function send(topo: Topology, c: VerdictCase, kind: 'tcp' | 'udp' | 'ping'): Promise<boolean> {
  const p = c.packet;
  if (kind === 'ping') return ping(c.direction === 'egress' ? topo.podNs : topo.hostNs, p.dst, p.src);
  const [client, server] = c.direction === 'egress' ? [topo.podAgent, topo.hostAgent] : [topo.hostAgent, topo.podAgent];
  return exchange(kind, client, server, p.src, p.dst, p.dport);
}

t.test('every case: the model over maps read back from the kernel', { skip }, async (t) => {
  const { root, remove } = testBpfRoot();
  t.teardown(remove);
  const ipcache = openIPCacheMap(root);
  t.teardown(() => ipcache.close());
  const policy = openPolicyMap(root, 3);
  t.teardown(() => policy.close());
  for (const c of verdictCases) {
    syncIPCache(ipcache, c);
    syncPolicyMap(policy, c.policy);
    t.strictSame(kernelVerdict(root, 3, c.direction, c.packet), c.expect, c.name);
  }
});

for (const program of ['per-endpoint', 'shared'] as const) t.test(`verdict cases with real packets through bpf_lxc (${program})`, { skip }, async (t) => {
  const cases = verdictCases.filter((c) => probeKind(c) !== undefined);
  t.ok(cases.length >= 35, `${cases.length} of ${verdictCases.length} cases are expressible as real traffic`);
  const peers = new Set<string>();
  for (const c of cases) peers.add(c.direction === 'egress' ? c.packet.dst : c.packet.src);
  const { root, remove } = testBpfRoot();
  t.teardown(remove);
  const topo = createTopology({
    ep4: TOPOLOGY.endpoint4, ep6: TOPOLOGY.endpoint6, host4: TOPOLOGY.host4, host6: TOPOLOGY.host6,
    prefix4: TOPOLOGY.prefix4, prefix6: TOPOLOGY.prefix6, peers: [...peers],
  });
  t.teardown(topo.cleanup);
  const ipcache = openIPCacheMap(root);
  t.teardown(() => ipcache.close());
  const policy = openPolicyMap(root, 7);
  t.teardown(() => policy.close());
  const cfg = { id: 7, identity: 4242, ipv4: TOPOLOGY.endpoint4, ipv6: TOPOLOGY.endpoint6, ifName: topo.hostIf, ifIndex: topo.ifIndex, mac: topo.mac, hostMac: topo.hostMac };
  const opts = { bpfRoot: root, netns: topo.hostNsPath };
  if (program === 'shared') {
    const { program: prog, result } = await loadSharedForEndpoint(cfg, opts);
    prog.close();
    t.teardown(() => unloadSharedEndpoint(7, topo.ifIndex, opts));
    t.equal(result!.attachments.from_container.mode, 'tcx', 'attached with tcx on this kernel');
  } else {
    const loaded = await loadEndpointProgram(cfg, opts);
    t.teardown(() => unloadEndpointProgram(7, topo.ifIndex, opts));
    t.equal(loaded.attachments.from_container.mode, 'tcx', 'attached with tcx on this kernel');
  }

  for (const c of cases) {
    const kind = probeKind(c)!;
    const other = c.direction === 'egress' ? 'ingress' : 'egress';
    const entries: PolicyEntry[] = [
      ...c.policy.filter((e) => e.direction === c.direction),
      { identity: 0, direction: other, protocol: 0, port: 0, deny: false },
    ];
    syncIPCache(ipcache, c);
    syncPolicyMap(policy, entries);
    const before = readDropCounters(root);
    const passed = await send(topo, c, kind);
    const after = readDropCounters(root);
    t.equal(passed, c.expect.allowed, `${c.name} (${kind}): ${c.expect.allowed ? 'passes' : 'drops'}`);
    t.strictSame(kernelVerdict(root, 7, c.direction, c.packet), c.expect, `${c.name}: the model over the kernel maps agrees`);
    if (!c.expect.allowed && c.expect.reason) {
      const r = c.expect.reason;
      t.ok(after[r]!.packets > before[r]!.packets, `${c.name}: counted as a '${r}' drop`);
    }
  }
});
