// Privileged: a pod's own connections through services in the real bpf_lxc, with real traffic, for
// both programs (per-endpoint and shared). One endpoint veth (the pod in its own namespace, the
// node's addresses and the backends on the host side, as in lb-bpf.test.ts):
//   - hairpin: a ClusterIP service whose only backend is the pod itself (IPv4 and IPv6) is reached
//     by the pod (handshake, an echo stream); the pod's server sees the loopback address as its
//     peer; no ingress rule is needed (Cilium's semantics), the egress policy still decides;
//   - NodePort from the pod: <node address>:<nodePort> (IPv4 and IPv6) reaches the NodePort
//     surrogate's backends, replies come from the node address; ClientIP affinity holds through
//     it; the node port of the pod itself through a node address (hairpin and NodePort at once);
//     the same port on an address that is not the node's is not translated; the egress policy is
//     the backend's.
import t from 'tap';
import { openIPCacheMap, openLBMaps, openPolicyMap, readDropCounters, syncPolicyMap, SERVICE_LOOPBACK } from '../../src/maps/index.js';
import { loadEndpointProgram, loadSharedForEndpoint, unloadEndpointProgram, unloadSharedEndpoint } from '../../src/cells/datapath-bpf/lxc/index.js';
import { LBOps, LBServiceManager, ServiceStore, type FrontendParams } from '../../src/cells/loadbalancer/index.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PolicyEntry } from '../../src/datapath/types.js';
import { createTopology, ip, skipUnlessBpf, testBpfRoot, type TrafficAgent } from '../bpf/fixtures/topology.js';
import { be, fe, svc } from '../loadbalancer/helpers.js';

const skip = skipUnlessBpf();
const EP = '10.164.0.2';
const EP6 = 'fd00:164::2';
const HOST = '10.164.0.1';
const HOST6 = 'fd00:164::1';
const NODE = '10.164.50.1';
const NODE6 = 'fd00:164:50::1';
const NOT_NODE = '10.164.51.1';
const BACKENDS = ['10.164.0.10', '10.164.0.11', '10.164.0.12'];
const BACKEND6 = 'fd00:164::10';
const SELF_VIP = '10.164.96.10';
const SELF_VIP6 = 'fd00:164:96::10';
const ECHO_VIP = '10.164.96.11';
const OWN_ID = 4242;
const BACKEND_ID = 1000;

/** A TCP NodePort frontend on the surrogate of `ip`'s family. */
const nodePort = (family: 4 | 6, port: number): FrontendParams => ({ address: { ip: family === 4 ? '0.0.0.0' : '::', port, protocol: 'tcp', scope: 'external' }, type: 'NodePort' });

async function listen(agent: TrafficAgent, proto: string, addr: string, port: number): Promise<string> {
  const id = agent.nextId();
  agent.command(`listen ${proto} ${addr} ${port} ${id}`);
  if (!(await agent.waitFor('ready', id, 10000))) throw new Error(`no listener on ${addr}:${port}: ${agent.why(id, undefined)}`);
  return id;
}

async function connect(agent: TrafficAgent, addr: string, port: number): Promise<boolean> {
  const id = agent.nextId();
  agent.command(`connect ${addr} ${port} - 600 ${id}`);
  return (await agent.waitFor(['connected', 'failed'], id, 5000)) === 'connected';
}

const hits = (agent: TrafficAgent, id: string): number => agent.output.split('\n').filter((l) => l === `got ${id}`).length;
const peers = (agent: TrafficAgent, id: string): string[] => [...agent.output.matchAll(new RegExp(`^peer ${id} (\\S+)$`, 'gm'))].map((m) => m[1]!);

/** The servers' hits once `total` of them were logged (a server's line can come after the client's connect returned), or after 2 s. */
async function hitsOf(agent: TrafficAgent, ids: string[], total: number): Promise<number[]> {
  const now = (): number[] => ids.map((id) => hits(agent, id));
  for (let i = 0; i < 40 && now().reduce((a, b) => a + b, 0) < total; i++) await new Promise((r) => setTimeout(r, 50));
  return now();
}

for (const program of ['per-endpoint', 'shared'] as const) t.test(`hairpin and NodePort from a pod through bpf_lxc (${program})`, { skip }, async (t) => {
  const { root, remove } = testBpfRoot();
  t.teardown(remove);
  const topo = createTopology({ ep4: EP, ep6: EP6, host4: HOST, host6: HOST6, prefix4: 24, prefix6: 64, peers: [...BACKENDS, BACKEND6, NODE, NODE6, NOT_NODE] });
  t.teardown(topo.cleanup);
  // as a pod's: everything else through the gateway (the loopback address of hairpin replies too)
  ip('-n', topo.podNs, 'route', 'add', 'default', 'via', HOST);
  ip('-n', topo.podNs, '-6', 'route', 'add', 'default', 'via', HOST6);

  const lb = openLBMaps(root, 65536, 16381);
  t.teardown(() => lb.close());
  const ops = new LBOps(lb, { algorithm: 'random', maglevTableSize: 16381, maxBackends: 65536 });
  const stateDir = mkdtempSync(join(tmpdir(), 'cellium-hairpin-'));
  t.teardown(() => rmSync(stateDir, { recursive: true, force: true }));
  const mgr = new LBServiceManager(65535, new ServiceStore(join(stateDir, 'services.json')));
  mgr.upsert({ service: svc('default/self'), frontends: [fe(SELF_VIP, 80)], backends: [be(EP, 8080)] });
  mgr.upsert({ service: svc('default/self6'), frontends: [fe(SELF_VIP6, 80)], backends: [be(EP6, 8080)] });
  mgr.upsert({ service: svc('default/echo'), frontends: [fe(ECHO_VIP, 90)], backends: [be(EP, 9090)] });
  mgr.upsert({ service: svc('default/np'), frontends: [nodePort(4, 30080)], backends: BACKENDS.map((b) => be(b, 8080)) });
  mgr.upsert({ service: svc('default/np6'), frontends: [nodePort(6, 30080)], backends: [be(BACKEND6, 8080)] });
  mgr.upsert({ service: svc('default/sticky', { sessionAffinity: true, sessionAffinityTimeoutSec: 60 }), frontends: [nodePort(4, 30081)], backends: BACKENDS.map((b) => be(b, 8081)) });
  mgr.upsert({ service: svc('default/np-self'), frontends: [nodePort(4, 30082)], backends: [be(EP, 8080)] });
  const failed = await ops.update(mgr.frontends.due().map((o) => [o.key, o.value] as const));
  t.same([...failed.keys()], [], 'the LB maps took every frontend');

  const ipcache = openIPCacheMap(root);
  t.teardown(() => ipcache.close());
  ipcache.setMany([
    ...BACKENDS.map((b) => [`${b}/32`, { identity: BACKEND_ID, flags: 0 }] as const),
    [`${BACKEND6}/128`, { identity: BACKEND_ID, flags: 0 }],
    [`${EP}/32`, { identity: OWN_ID, flags: 0 }],
    [`${EP6}/128`, { identity: OWN_ID, flags: 0 }],
    // the node's own addresses, as the agent writes them (the host identity); NOT_NODE is not one
    [`${NODE}/32`, { identity: 1, flags: 0 }],
    [`${NODE6}/128`, { identity: 1, flags: 0 }],
  ]);
  const policy = openPolicyMap(root, 9);
  t.teardown(() => policy.close());
  const allowSelf: PolicyEntry[] = [8080, 9090].map((port) => ({ identity: OWN_ID, direction: 'egress', protocol: 6, port, deny: false }));
  const allowBackends: PolicyEntry[] = [8080, 8081].map((port) => ({ identity: BACKEND_ID, direction: 'egress', protocol: 6, port, deny: false }));
  // no ingress rule at all: replies pass by conntrack, the hairpin needs none (as in Cilium)
  syncPolicyMap(policy, [...allowSelf, ...allowBackends]);
  const cfg = { id: 9, identity: OWN_ID, ipv4: EP, ipv6: EP6, ifName: topo.hostIf, ifIndex: topo.ifIndex, mac: topo.mac, hostMac: topo.hostMac };
  const opts = { bpfRoot: root, netns: topo.hostNsPath };
  if (program === 'shared') {
    (await loadSharedForEndpoint(cfg, opts)).program.close();
    t.teardown(() => unloadSharedEndpoint(9, topo.ifIndex, opts));
  } else {
    await loadEndpointProgram(cfg, opts);
    t.teardown(() => unloadEndpointProgram(9, topo.ifIndex, opts));
  }

  // hairpin: the pod through a ClusterIP whose only backend is itself
  const self = await listen(topo.podAgent, 'tcppeer', EP, 8080);
  const self6 = await listen(topo.podAgent, 'tcppeer', EP6, 8080);
  for (let i = 0; i < 5; i++) t.ok(await connect(topo.podAgent, SELF_VIP, 80), `hairpin connection ${i + 1} to ${SELF_VIP}:80 completed (the SYN-ACK came from the VIP)`);
  await hitsOf(topo.podAgent, [self], 5);
  t.same(peers(topo.podAgent, self), Array(5).fill(SERVICE_LOOPBACK.ipv4), `the pod's server saw ${SERVICE_LOOPBACK.ipv4} as its peer every time`);
  for (let i = 0; i < 5; i++) t.ok(await connect(topo.podAgent, SELF_VIP6, 80), `IPv6 hairpin connection ${i + 1} to [${SELF_VIP6}]:80 completed`);
  await hitsOf(topo.podAgent, [self6], 5);
  t.same(peers(topo.podAgent, self6), Array(5).fill(SERVICE_LOOPBACK.ipv6), `IPv6: the peer was ${SERVICE_LOOPBACK.ipv6}`);

  await listen(topo.podAgent, 'tcpecho', EP, 9090);
  const s = topo.podAgent.nextId();
  topo.podAgent.command(`stream ${ECHO_VIP} 90 - ${s}`);
  t.ok(await topo.podAgent.waitFor('streaming', s, 5000), 'a hairpin stream is up');
  await new Promise((r) => setTimeout(r, 400));
  const from = topo.podAgent.output.length;
  topo.podAgent.command(`report ${s}`);
  await topo.podAgent.waitFor('echoes', s, 2000);
  const echoes = Number(/echoes \S+ (\d+)\n/.exec(topo.podAgent.output.slice(from))?.[1] ?? -1);
  t.ok(echoes > 0, `data goes both ways through the hairpin (${echoes} echoes)`);
  t.notMatch(topo.podAgent.output, new RegExp(`reset ${s} `), 'never reset');
  topo.podAgent.command(`stop ${s}`);

  // NodePort from the pod: the node's address and the node port
  const servers = await Promise.all(BACKENDS.map((b) => listen(topo.hostAgent, 'tcp', b, 8080)));
  const N = 30;
  let ok = 0;
  for (let i = 0; i < N; i++) if (await connect(topo.podAgent, NODE, 30080)) ok++;
  t.equal(ok, N, `${N} connections to ${NODE}:30080 completed (replies from the node address: rev-NAT of the surrogate)`);
  const counts = await hitsOf(topo.hostAgent, servers, N);
  t.equal(counts.reduce((a, b) => a + b, 0), N, 'every connection reached a backend');
  t.ok(counts.filter((c) => c > 0).length >= 2, `spread over the backends (${counts.join(', ')})`);
  const server6 = await listen(topo.hostAgent, 'tcp', BACKEND6, 8080);
  for (let i = 0; i < 5; i++) t.ok(await connect(topo.podAgent, NODE6, 30080), `IPv6 NodePort connection ${i + 1} to [${NODE6}]:30080`);
  t.equal((await hitsOf(topo.hostAgent, [server6], 5))[0], 5, 'IPv6: every connection reached the backend');

  const sticky = await Promise.all(BACKENDS.map((b) => listen(topo.hostAgent, 'tcp', b, 8081)));
  for (let i = 0; i < 15; i++) t.ok(await connect(topo.podAgent, NODE, 30081), `affinity connection ${i + 1} to ${NODE}:30081`);
  const pinned = await hitsOf(topo.hostAgent, sticky, 15);
  t.same(pinned.filter((n) => n > 0).length, 1, `ClientIP affinity through the node port: every connection went to one backend (${pinned.join(', ')})`);

  const before = hits(topo.podAgent, self);
  t.ok(await connect(topo.podAgent, NODE, 30082), 'the pod reaches itself through the node address and a node port');
  await hitsOf(topo.podAgent, [self], before + 1);
  t.equal(peers(topo.podAgent, self).at(-1), SERVICE_LOOPBACK.ipv4, 'as a hairpin (the loopback address as the peer)');

  t.notOk(await connect(topo.podAgent, NOT_NODE, 30080), `${NOT_NODE}, not the node's address: the node port is not translated (nothing listens there)`);
  t.equal((await hitsOf(topo.hostAgent, servers, N + 1)).reduce((a, b) => a + b, 0), N, 'and no backend saw it');

  // the egress policy still decides: the pod's own identity for a hairpin, the backend's for a node port
  syncPolicyMap(policy, allowBackends);
  let drops = readDropCounters(root).policy!.packets;
  t.notOk(await connect(topo.podAgent, SELF_VIP, 80), 'hairpin without an egress rule for the pod\'s own identity: denied');
  t.notOk(await connect(topo.podAgent, SELF_VIP6, 80), 'IPv6 too');
  t.ok(readDropCounters(root).policy!.packets > drops, 'counted as policy drops');
  syncPolicyMap(policy, allowSelf);
  drops = readDropCounters(root).policy!.packets;
  t.notOk(await connect(topo.podAgent, NODE, 30080), 'a node port whose backends the egress policy does not allow: denied');
  t.ok(readDropCounters(root).policy!.packets > drops, 'counted as a policy drop');
  t.ok(await connect(topo.podAgent, SELF_VIP, 80), 'the hairpin is allowed again with the rule back');
});
