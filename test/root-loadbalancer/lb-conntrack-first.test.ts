// Privileged: the service cases whose packets conntrack finds under their own tuple before the
// service lookup (test/fixtures/service-cases.ts conntrackFirstCases: bpf_lxc's ct_lookup_first)
// against the real bpf_lxc, both ways of loading it, on crafted packets (BPF_PROG_TEST_RUN): the
// LB maps written by the loadbalancer cell's writer, each step's packet run through from_container
// or to_container, the kernel passing and dropping as the memory datapath (the model) does; a
// packet that was not translated leaves no service entry (TUPLE_F_SERVICE) in conntrack.
import t, { type Test } from 'tap';
import { CtMaps, PolicyMapsMap, openEndpointsMap, openIPCacheMap, openLBMaps, openPolicyMap, syncPolicyMap } from '../../src/maps/index.js';
import { loadLxcObject, loadSharedForEndpoint, writeSharedEndpoint } from '../../src/cells/datapath-bpf/lxc/index.js';
import { MemoryDatapath } from '../../src/cells/datapath-memory/index.js';
import { LBOps, LBServiceManager, type ServiceUpsert } from '../../src/cells/loadbalancer/index.js';
import { TupleFlags } from '../../src/datapath/conntrack.js';
import type { EndpointDatapathConfig } from '../../src/datapath/types.js';
import { conntrackFirstCases, type ServiceCase, type ServiceFixture } from '../fixtures/verdict-cases.js';
import { frame } from '../bpf/fixtures/packets.js';
import { skipUnlessBpf, testBpfRoot } from '../bpf/fixtures/topology.js';

const skip = skipUnlessBpf();
const CFG: EndpointDatapathConfig = { id: 7, identity: 4242, ipv4: '10.0.0.2', ipv6: 'fd00::2', ifName: 'lxc7', ifIndex: 7, mac: '', hostMac: '' };
const TC_ACT_OK = 0;
const TC_ACT_SHOT = 2;

function upserts(services: readonly ServiceFixture[]): ServiceUpsert[] {
  return services.map((s, i) => ({
    service: { key: `default/svc${i}`, name: `svc${i}`, namespace: 'default', source: 'k8s', sessionAffinity: false, sessionAffinityTimeoutSec: 0, extTrafficPolicy: 'Cluster', intTrafficPolicy: 'Cluster', sourceRanges: [] },
    frontends: [{ address: { ip: s.vip, port: s.port, protocol: s.protocol, scope: 'external' }, type: s.type ?? 'ClusterIP' }],
    backends: s.backends.map((b) => ({ address: { ip: b.ip, port: b.port, protocol: s.protocol, scope: 'external' }, state: b.state ?? 'active', weight: 100 })),
  }));
}

/** Writes `services` through the loadbalancer cell's writer (the ones not named any more are deleted). */
async function apply(mgr: LBServiceManager, ops: LBOps, services: readonly ServiceFixture[]): Promise<void> {
  for (const u of upserts(services)) mgr.upsert(u);
  const dels = mgr.frontends.deletions();
  await ops.delete(dels);
  for (const k of dels) mgr.frontends.deleted(k);
  await ops.update(mgr.frontends.due().map((o) => [o.key, o.value] as const));
}

async function runCase(t: Test, program: 'per-endpoint' | 'shared', c: ServiceCase): Promise<void> {
  const { root, remove } = testBpfRoot();
  t.teardown(remove);
  const ct = CtMaps.open(root, { tcp: 4096, any: 4096 });
  const ipcache = openIPCacheMap(root);
  const policy = openPolicyMap(root, CFG.id);
  const lb = openLBMaps(root, 65536, 16381); // the object's own sizes (the loader reuses the pinned maps)
  t.teardown(() => {
    lb.close();
    ct.close();
    ipcache.close();
    policy.close();
  });
  ipcache.setMany(c.ipcache.map((e) => [e.cidr, { identity: e.identity, flags: 0 }] as const));
  syncPolicyMap(policy, c.policy);
  const kernelMgr = new LBServiceManager();
  const kernelOps = new LBOps(lb, { algorithm: 'random', maglevTableSize: 16381, maxBackends: 65536 });
  await apply(kernelMgr, kernelOps, c.services);

  // the model: the memory datapath fed the same packets
  const dp = new MemoryDatapath({ random: () => 0 });
  for (const e of c.ipcache) dp.maps.upsertIPCache(e);
  dp.maps.setPolicy(CFG.id, c.policy);
  t.same(await dp.maps.flush(), []);
  const modelMgr = new LBServiceManager();
  const modelOps = new LBOps(dp.lbMaps, { algorithm: 'random', maglevTableSize: 251, maxBackends: 100 });
  await apply(modelMgr, modelOps, c.services);

  const lo = { bpfRoot: root, reuseMaps: { ...ct.fds(), cellium_ipcache: ipcache.map.fd, cellium_policy: policy.map.fd } };
  const obj = program === 'shared'
    // the shared program's test runs cross the loopback (skb->ifindex 1)
    ? (await loadSharedForEndpoint({ ...CFG, ifIndex: 1 }, lo, false)).program
    : await loadLxcObject(CFG, lo);
  t.teardown(() => obj.close());
  if (program === 'shared') {
    const endpoints = openEndpointsMap(root);
    const policyMaps = PolicyMapsMap.open(root);
    writeSharedEndpoint({ endpoints, policyMaps }, { ...CFG, ifIndex: 1 }, policy.map.fd);
    endpoints.close();
    policyMaps.close();
  }
  for (const s of c.steps) {
    if (s.services) {
      await apply(kernelMgr, kernelOps, s.services);
      await apply(modelMgr, modelOps, s.services);
    }
    const model = dp.process(CFG.id, s.direction, s.packet);
    t.same(model.verdict, s.expect, `model: ${s.name}`);
    const serviceEntries = (): number => ct.entries().filter((e) => e.key.flags & TupleFlags.SERVICE).length;
    const before = serviceEntries();
    const { retval } = obj.testRun(s.direction === 'egress' ? 'from_container' : 'to_container', frame(s.packet));
    t.ok(retval === TC_ACT_OK || retval === TC_ACT_SHOT, `tc verdict ${retval}`);
    t.equal(retval === TC_ACT_OK, s.expect.allowed, `kernel (${program}): ${s.name}: ${s.expect.allowed ? 'passed' : 'dropped'}`);
    t.equal(serviceEntries() > before, s.expect.service !== undefined, s.expect.service ? 'translated: a service entry was written' : 'not looked up as a service: no service entry');
  }
}

for (const program of ['per-endpoint', 'shared'] as const) {
  t.test(`packets conntrack finds under their own tuple are not translated (${program})`, { skip }, async (t) => {
    t.ok(conntrackFirstCases.length >= 2, 'the table has its cases');
    for (const c of conntrackFirstCases) await t.test(c.name, (t) => runCase(t, program, c));
  });
}
