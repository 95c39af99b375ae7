// Privileged: services through the real bpf_lxc with real traffic (IPv4, IPv6). One endpoint veth (the pod
// in its own namespace, the backends as addresses on the host side), the LB maps written by the
// loadbalancer cell's writer, the program loaded once. TCP connections to the VIP spread over the
// backends and see the VIP as their peer (rev-NAT: otherwise the handshake fails), UDP answers come
// from the VIP, the policy is the backend's after translation, a VIP's other ports and a service
// without backends are dropped with their reasons, ClientIP affinity pins the client, and a backend
// that starts terminating keeps its
// established stream while new connections go elsewhere; Maglev picks the table's entry; after a
// writer restart (state directory + kernel maps) a stream through a VIP goes on.
import t from 'tap';
import { openIPCacheMap, openLBMaps, openPolicyMap, readDropCounters, syncPolicyMap } from '../../src/maps/index.js';
import { loadEndpointProgram, loadSharedForEndpoint, unloadEndpointProgram, unloadSharedEndpoint } from '../../src/cells/datapath-bpf/lxc/index.js';
import { LBOps, LBServiceManager, ServiceStore, type Backend } from '../../src/cells/loadbalancer/index.js';
import { Reconciler } from '../../src/lib/reconciler/index.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PolicyEntry } from '../../src/datapath/types.js';
import { createTopology, ip, skipUnlessBpf, testBpfRoot, type TrafficAgent } from '../bpf/fixtures/topology.js';
import { be, fe, svc } from '../loadbalancer/helpers.js';
import { lbHash } from '../../src/datapath/model/lb.js';

const skip = skipUnlessBpf();
const EP = '10.161.0.2';
const HOST = '10.161.0.1';
const BACKENDS = ['10.161.0.10', '10.161.0.11', '10.161.0.12'];
const VIP = '10.161.96.10';
const EMPTY_VIP = '10.161.96.11';
const EMPTY_VIP6 = 'fd00:161:96::11';
const STREAM_VIP = '10.161.96.12';
const STICKY_VIP = '10.161.96.13';
const BACKENDS6 = ['fd00:161::10', 'fd00:161::11'];
const VIP6 = 'fd00:161:96::10';

async function listen(agent: TrafficAgent, proto: string, addr: string, port: number): Promise<string> {
  const id = agent.nextId();
  agent.command(`listen ${proto} ${addr} ${port} ${id}`);
  if (!(await agent.waitFor('ready', id, 10000))) throw new Error(`no listener on ${addr}:${port}`);
  return id;
}

async function connect(agent: TrafficAgent, addr: string, port: number): Promise<boolean> {
  const id = agent.nextId();
  agent.command(`connect ${addr} ${port} - 600 ${id}`);
  return (await agent.waitFor(['connected', 'failed'], id, 5000)) === 'connected';
}

/** The error a `stream` ended with (its `reset ID CODE` line), or undefined after 5 s. */
async function resetCode(agent: TrafficAgent, id: string): Promise<string | undefined> {
  const line = new RegExp(`^reset ${id} (\\S+)$`, 'm');
  for (let i = 0; i < 100 && !line.test(agent.output); i++) await new Promise((r) => setTimeout(r, 50));
  return line.exec(agent.output)?.[1];
}

const hits = (agent: TrafficAgent, id: string): number => agent.output.split('\n').filter((l) => l === `got ${id}`).length;

/**
 * The servers' hits once `total` of them have been logged (a server's "got" line can reach the
 * agent's output after the client's connect returned), or as they are after 2 s.
 */
async function hitsOf(agent: TrafficAgent, ids: string[], total: number): Promise<number[]> {
  const now = (): number[] => ids.map((id) => hits(agent, id));
  for (let i = 0; i < 40 && now().reduce((a, b) => a + b, 0) < total; i++) await new Promise((r) => setTimeout(r, 50));
  return now();
}

for (const program of ['per-endpoint', 'shared'] as const) t.test(`ClusterIP services through bpf_lxc (${program})`, { skip }, async (t) => {
  const { root, remove } = testBpfRoot();
  t.teardown(remove);
  const topo = createTopology({ ep4: EP, ep6: 'fd00:161::2', host4: HOST, host6: 'fd00:161::1', prefix4: 24, prefix6: 64, peers: [...BACKENDS, ...BACKENDS6] });
  t.teardown(topo.cleanup);
  ip('-n', topo.podNs, 'route', 'add', '10.161.96.0/24', 'via', HOST);
  ip('-n', topo.podNs, '-6', 'route', 'add', 'fd00:161:96::/64', 'via', 'fd00:161::1');

  const lb = openLBMaps(root, 65536, 16381);
  t.teardown(() => lb.close());
  const ops = new LBOps(lb, { algorithm: 'random', maglevTableSize: 16381, maxBackends: 65536 });
  const stateDir = mkdtempSync(join(tmpdir(), 'cellium-lb-bpf-'));
  t.teardown(() => rmSync(stateDir, { recursive: true, force: true }));
  const mgr = new LBServiceManager(65535, new ServiceStore(join(stateDir, 'services.json')));
  const sync = async () => {
    const dels = mgr.frontends.deletions();
    await ops.delete(dels);
    for (const k of dels) mgr.frontends.deleted(k);
    const failed = await ops.update(mgr.frontends.due().map((o) => [o.key, o.value] as const));
    t.same([...failed.keys()], [], 'the LB maps took every frontend');
  };
  const udp = (b: Backend): Backend => ({ ...b, address: { ...b.address, protocol: 'udp' } });
  mgr.upsert({ service: svc('default/web'), frontends: [fe(VIP, 80)], backends: BACKENDS.map((b) => be(b, 8080)) });
  mgr.upsert({ service: svc('default/dns'), frontends: [{ ...fe(VIP, 53), address: { ip: VIP, port: 53, protocol: 'udp', scope: 'external' } }], backends: [udp(be(BACKENDS[0]!, 5353))] });
  mgr.upsert({ service: svc('default/sticky', { sessionAffinity: true, sessionAffinityTimeoutSec: 60 }), frontends: [fe(STICKY_VIP, 80)], backends: BACKENDS.map((b) => be(b, 8080)) });
  mgr.upsert({ service: svc('default/web6'), frontends: [fe(VIP6, 80)], backends: BACKENDS6.map((b) => be(b, 8080)) });
  mgr.upsert({ service: svc('default/empty'), frontends: [fe(EMPTY_VIP, 80), { ...fe(EMPTY_VIP, 53), address: { ip: EMPTY_VIP, port: 53, protocol: 'udp', scope: 'external' } }], backends: [] });
  mgr.upsert({ service: svc('default/empty6'), frontends: [fe(EMPTY_VIP6, 80)], backends: [] });
  mgr.upsert({ service: svc('default/stream'), frontends: [fe(STREAM_VIP, 90)], backends: [be(BACKENDS[0]!, 9090)] });
  await sync();

  const ipcache = openIPCacheMap(root);
  t.teardown(() => ipcache.close());
  ipcache.setMany([...BACKENDS.map((b) => [`${b}/32`, { identity: 1000, flags: 0 }] as const), ...BACKENDS6.map((b) => [`${b}/128`, { identity: 1000, flags: 0 }] as const)]);
  const policy = openPolicyMap(root, 9);
  t.teardown(() => policy.close());
  const allowBackends: PolicyEntry[] = [
    { identity: 1000, direction: 'egress', protocol: 6, port: 8080, deny: false },
    { identity: 1000, direction: 'egress', protocol: 6, port: 9090, deny: false },
    { identity: 1000, direction: 'egress', protocol: 6, port: 7070, deny: false },
    { identity: 1000, direction: 'egress', protocol: 17, port: 5353, deny: false },
    { identity: 0, direction: 'ingress', protocol: 0, port: 0, deny: false },
  ];
  syncPolicyMap(policy, allowBackends);
  const cfg = { id: 9, identity: 4242, ipv4: EP, ipv6: 'fd00:161::2', ifName: topo.hostIf, ifIndex: topo.ifIndex, mac: topo.mac, hostMac: topo.hostMac };
  const opts = { bpfRoot: root, netns: topo.hostNsPath };
  if (program === 'shared') {
    (await loadSharedForEndpoint(cfg, opts)).program.close();
    t.teardown(() => unloadSharedEndpoint(9, topo.ifIndex, opts));
  } else {
    await loadEndpointProgram(cfg, opts);
    t.teardown(() => unloadEndpointProgram(9, topo.ifIndex, opts));
  }

  const servers = await Promise.all(BACKENDS.map((b) => listen(topo.hostAgent, 'tcp', b, 8080)));
  const N = 90;
  let ok = 0;
  for (let i = 0; i < N; i++) if (await connect(topo.podAgent, VIP, 80)) ok++;
  t.equal(ok, N, `${N} connections to the VIP completed (the SYN-ACK came from the VIP: rev-NAT)`);
  const counts = await hitsOf(topo.hostAgent, servers, N);
  t.equal(counts.reduce((a, b) => a + b, 0), N, 'every connection reached a backend');
  for (const [i, c] of counts.entries()) t.ok(c >= N * 0.15, `backend ${BACKENDS[i]} got ${c} of ${N} (>= 15%)`);

  const pinned = counts;
  for (let i = 0; i < 15; i++) t.ok(await connect(topo.podAgent, STICKY_VIP, 80), `affinity connection ${i + 1}`);
  const moved = (await hitsOf(topo.hostAgent, servers, N + 15)).map((n, i) => n - pinned[i]!);
  t.same(moved.filter((n) => n > 0).length, 1, `ClientIP affinity: every connection went to one backend (${moved.join(', ')})`);

  const servers6 = await Promise.all(BACKENDS6.map((b) => listen(topo.hostAgent, 'tcp', b, 8080)));
  let ok6 = 0;
  for (let i = 0; i < 20; i++) if (await connect(topo.podAgent, VIP6, 80)) ok6++;
  t.equal(ok6, 20, 'IPv6: 20 connections to the VIP completed (rev-NAT of the SYN-ACK)');
  const counts6 = await hitsOf(topo.hostAgent, servers6, 20);
  t.equal(counts6.reduce((a, b) => a + b, 0), 20, 'IPv6: every connection reached a backend');
  t.ok(counts6.every((c) => c > 0), `IPv6: both backends were used (${counts6.join(', ')})`);

  const dns = await listen(topo.hostAgent, 'udpecho', BACKENDS[0]!, 5353);
  const q = topo.podAgent.nextId();
  topo.podAgent.command(`ask ${VIP} 53 - 3000 ${q}`);
  t.equal(await topo.podAgent.waitFor(['answered', 'refused', 'timeout'], q, 6000), 'answered', 'UDP: the answer comes from the VIP (a connected socket accepts it)');
  t.ok(hits(topo.hostAgent, dns) > 0);

  let before = readDropCounters(root);
  t.notOk(await connect(topo.podAgent, VIP, 81), 'a port the VIP does not have');
  let after = readDropCounters(root);
  t.ok(after['no-service']!.packets > before['no-service']!.packets, 'counted as no-service');
  before = after;
  t.notOk(await connect(topo.podAgent, EMPTY_VIP, 80), 'a service without backends');
  const refused = topo.podAgent.nextId();
  topo.podAgent.command(`stream ${EMPTY_VIP} 80 - ${refused}`);
  t.equal(await resetCode(topo.podAgent, refused), 'ECONNREFUSED', 'refused (ICMP port unreachable), not left to time out');
  const refused6 = topo.podAgent.nextId();
  topo.podAgent.command(`stream ${EMPTY_VIP6} 80 - ${refused6}`);
  t.equal(await resetCode(topo.podAgent, refused6), 'ECONNREFUSED', 'IPv6: refused too (ICMPv6 port unreachable)');
  after = readDropCounters(root);
  t.ok(after['no-backend']!.packets > before['no-backend']!.packets, 'counted as no-backend');
  const rq = topo.podAgent.nextId();
  topo.podAgent.command(`ask ${EMPTY_VIP} 53 - 2000 ${rq}`);
  t.equal(await topo.podAgent.waitFor(['answered', 'refused', 'timeout'], rq, 5000), 'refused', 'UDP to a service without backends: ECONNREFUSED from the ICMP port unreachable');

  syncPolicyMap(policy, [{ identity: 1000, direction: 'egress', protocol: 6, port: 80, deny: false }, allowBackends.at(-1)!]);
  before = readDropCounters(root);
  t.notOk(await connect(topo.podAgent, VIP, 80), 'allowing the VIP port is not enough: the policy is the backend\'s, on its port');
  after = readDropCounters(root);
  t.ok(after.policy!.packets > before.policy!.packets, 'counted as a policy drop');
  syncPolicyMap(policy, allowBackends);

  // a backend that starts terminating keeps its established stream; new connections go elsewhere
  const echoA = await listen(topo.hostAgent, 'tcpecho', BACKENDS[0]!, 9090);
  const echoB = await listen(topo.hostAgent, 'tcpecho', BACKENDS[1]!, 9090);
  const s = topo.podAgent.nextId();
  topo.podAgent.command(`stream ${STREAM_VIP} 90 - ${s}`);
  t.ok(await topo.podAgent.waitFor('streaming', s, 5000), 'the stream is up');
  const echoes = async (): Promise<number> => {
    const before = topo.podAgent.output.length;
    topo.podAgent.command(`report ${s}`);
    await topo.podAgent.waitFor('echoes', s, 2000);
    const m = /echoes \S+ (\d+)\n/.exec(topo.podAgent.output.slice(before));
    return m ? Number(m[1]) : -1;
  };
  await new Promise((r) => setTimeout(r, 300));
  const e1 = await echoes();
  t.ok(e1 > 0, `echoes through the VIP (${e1})`);
  mgr.setBackends('default/stream', [be(BACKENDS[0]!, 9090, 'terminating'), be(BACKENDS[1]!, 9090)]);
  await sync();
  await new Promise((r) => setTimeout(r, 400));
  const e2 = await echoes();
  t.ok(e2 > e1, `the established stream to the terminating backend goes on (${e1} -> ${e2})`);
  t.notMatch(topo.podAgent.output, new RegExp(`reset ${s} `), 'never reset');
  for (let i = 0; i < 5; i++) t.ok(await connect(topo.podAgent, STREAM_VIP, 90), `new connection ${i + 1}`);
  const [gotA, gotB] = await hitsOf(topo.hostAgent, [echoA, echoB], 6);
  t.equal(gotB, 5, 'every new connection went to the active backend');
  t.equal(gotA, 1, 'the terminating backend got only the stream');
  topo.podAgent.command(`stop ${s}`);

  // Maglev in the kernel: a writer with --bpf-lb-algorithm=maglev takes the maps over (as a
  // restarted agent would) and writes the tables; the kernel's choices are the table's entry at
  // lb_hash(5-tuple), which lbHash computes the same way.
  const mops = new LBOps(lb, { algorithm: 'maglev', maglevTableSize: 16381, maxBackends: 65536, noBackendResponse: 'drop' });
  t.ok(mops.restore() > 0, 'the maglev writer found the frontends in the kernel');
  const MAGLEV_VIP = '10.161.96.14';
  mgr.upsert({ service: svc('default/maglev'), frontends: [fe(MAGLEV_VIP, 70)], backends: BACKENDS.map((b) => be(b, 7070)) });
  t.same([...(await mops.update(mgr.frontends.all().map((o) => [o.key, o.value] as const))).keys()], []);
  const dq = topo.podAgent.nextId();
  topo.podAgent.command(`ask ${EMPTY_VIP} 53 - 800 ${dq}`);
  t.equal(await topo.podAgent.waitFor(['answered', 'refused', 'timeout'], dq, 5000), 'timeout', '--service-no-backend-response=drop: no answer at all');
  const revNat = mgr.list().find((f) => f.frontend.address.ip === MAGLEV_VIP)!.frontend.id;
  const ports = await Promise.all(BACKENDS.map((b) => listen(topo.hostAgent, 'tcpport', b, 7070)));
  for (let i = 0; i < 30; i++) t.ok(await connect(topo.podAgent, MAGLEV_VIP, 70), `maglev connection ${i + 1}`);
  const chosen = new Map<number, string>();
  ports.forEach((id, i) => {
    for (const m of topo.hostAgent.output.matchAll(new RegExp(`^from ${id} (\\d+)$`, 'gm'))) chosen.set(Number(m[1]), BACKENDS[i]!);
  });
  t.equal(chosen.size, 30, 'every connection was seen with its source port');
  const addressOf = new Map(lb.backends4.entries().map(([id, v]) => [id, v.address]));
  const pick = (table: Uint32Array, sport: number): string | undefined => addressOf.get(table[lbHash(EP, MAGLEV_VIP, sport, 70, 6) % 16381]!);
  const table0 = lb.maglev4.get(revNat)!;
  const agree = [...chosen].filter(([sport, backend]) => pick(table0, sport) === backend).length;
  t.equal(agree, 30, 'the kernel chose the Maglev table entry at lb_hash of every flow');
  mgr.setBackends('default/maglev', BACKENDS.slice(0, 2).map((b) => be(b, 7070)));
  await mops.update(mgr.frontends.all().map((o) => [o.key, o.value] as const));
  const table1 = lb.maglev4.get(revNat)!;
  let remapped = 0;
  let movedOfOthers = 0;
  const SAMPLE = 20000;
  for (let sport = 1024; sport < 1024 + SAMPLE; sport++) {
    const a = pick(table0, sport);
    const b = pick(table1, sport);
    if (a !== b) {
      remapped++;
      if (a !== BACKENDS[2]) movedOfOthers++;
    }
  }
  t.ok(remapped / SAMPLE <= 1 / 3 + 0.03, `removing one of 3 backends remapped ${(100 * remapped / SAMPLE).toFixed(1)}% of ${SAMPLE} sampled flows (kernel tables)`);
  t.ok(movedOfOthers / SAMPLE <= 0.03, `${(100 * movedOfOthers / SAMPLE).toFixed(2)}% of the flows of the remaining backends remapped`);

  // The agent restarts (its writer gone, a new one from the state directory and the kernel):
  // an established stream through a VIP goes on, the services and backend IDs are unchanged.
  const s2 = topo.podAgent.nextId();
  topo.podAgent.command(`stream ${STREAM_VIP} 90 - ${s2}`);
  t.ok(await topo.podAgent.waitFor('streaming', s2, 5000), 'a stream through the VIP is up');
  const echoes2 = async (): Promise<number> => {
    const from = topo.podAgent.output.length;
    topo.podAgent.command(`report ${s2}`);
    await topo.podAgent.waitFor('echoes', s2, 2000);
    const m = /echoes \S+ (\d+)\n/.exec(topo.podAgent.output.slice(from));
    return m ? Number(m[1]) : -1;
  };
  await new Promise((r) => setTimeout(r, 300));
  const before1 = await echoes2();
  await mgr.flushStore();
  const listBefore = mgr.list().map((f) => [f.frontend.id, f.frontend.address.ip, f.frontend.address.port, f.frontend.backends.map((b) => b.address.ip)]);
  const idsBefore = lb.backends4.entries().sort((a, b) => a[0] - b[0]);
  const mgr2 = new LBServiceManager(65535, new ServiceStore(join(stateDir, 'services.json')));
  t.ok((await mgr2.restore()) > 0, 'services restored from the state directory');
  const ops2 = new LBOps(lb, { algorithm: 'maglev', maglevTableSize: 16381, maxBackends: 65536, noBackendResponse: 'drop' });
  t.ok(ops2.restore() > 0, 'the new writer found the frontends in the kernel');
  const r2 = new Reconciler(mgr2.frontends, ops2);
  r2.start();
  await r2.flush();
  t.same((await r2.prune()).pruned, 0, 'nothing to prune: every frontend in the kernel is desired');
  await r2.stop();
  t.same(mgr2.list().map((f) => [f.frontend.id, f.frontend.address.ip, f.frontend.address.port, f.frontend.backends.map((b) => b.address.ip)]), listBefore, 'the same services with the same IDs');
  t.same(lb.backends4.entries().sort((a, b) => a[0] - b[0]), idsBefore, 'the same backend IDs');
  await new Promise((r) => setTimeout(r, 400));
  const after1 = await echoes2();
  t.ok(after1 > before1, `the established stream went on across the restart (${before1} -> ${after1})`);
  t.notMatch(topo.podAgent.output, new RegExp(`reset ${s2} `), 'never reset');
  topo.podAgent.command(`stop ${s2}`);
});
