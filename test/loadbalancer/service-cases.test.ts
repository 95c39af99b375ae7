// The service cases of the shared verdict table against the memory datapath: the LB maps written
// by the loadbalancer cell's writer, packets translated and judged against the backend's policy.
import t from 'tap';
import { MemoryDatapath } from '../../src/cells/datapath-memory/index.js';
import { LBOps, LBServiceManager, type ServiceUpsert } from '../../src/cells/loadbalancer/index.js';
import { serviceCases, type ServiceFixture } from '../fixtures/verdict-cases.js';

function upserts(services: readonly ServiceFixture[]): ServiceUpsert[] {
  return services.map((s, i) => ({
    service: { key: `default/svc${i}`, name: `svc${i}`, namespace: 'default', source: 'k8s', sessionAffinity: !!s.affinitySec, sessionAffinityTimeoutSec: s.affinitySec ?? 0, extTrafficPolicy: 'Cluster', intTrafficPolicy: 'Cluster', sourceRanges: [] },
    frontends: [{ address: { ip: s.vip, port: s.port, protocol: s.protocol, scope: 'external' }, type: s.type ?? 'ClusterIP' }],
    backends: s.backends.map((b) => ({ address: { ip: b.ip, port: b.port, protocol: s.protocol, scope: 'external' }, state: b.state ?? 'active', weight: 100 })),
  }));
}

t.test('service cases on the memory datapath', async (t) => {
  t.ok(serviceCases.length >= 10, 'the table has its service cases');
  const reasons = new Set<string>();
  for (const c of serviceCases) {
    let random = 0;
    const dp = new MemoryDatapath({ random: () => random });
    for (const e of c.ipcache) dp.maps.upsertIPCache(e);
    dp.maps.setPolicy(7, c.policy);
    t.same(await dp.maps.flush(), []);
    const mgr = new LBServiceManager();
    const ops = new LBOps(dp.lbMaps, { algorithm: 'random', maglevTableSize: 251, maxBackends: 100, noBackendResponse: c.noBackendResponse ?? 'reject' });
    const apply = async (services: readonly ServiceFixture[]) => {
      const ups = upserts(services);
      for (const u of ups) mgr.upsert(u);
      const dels = mgr.frontends.deletions();
      await ops.delete(dels);
      for (const k of dels) mgr.frontends.deleted(k);
      await ops.update(mgr.frontends.due().map((o) => [o.key, o.value] as const));
    };
    await apply(c.services);
    for (const s of c.steps) {
      if (s.services) await apply(s.services);
      random = s.random ?? 0;
      const out = dp.process(7, s.direction, s.packet);
      t.same(out.verdict, s.expect, `${c.name}: ${s.name}`);
      if (out.verdict.reason) reasons.add(out.verdict.reason);
    }
  }
  t.same([...reasons].sort(), ['no-backend', 'no-service', 'policy'], 'every service drop reason is covered');
});

t.test('verdict() asks without committing: no CT_SERVICE entry, no affinity', async (t) => {
  const dp = new MemoryDatapath({ random: () => 0 });
  dp.maps.upsertIPCache({ cidr: '10.0.0.10/32', identity: 1000 });
  dp.maps.setPolicy(7, [{ identity: 1000, direction: 'egress', protocol: 6, port: 8080, deny: false }]);
  const mgr = new LBServiceManager();
  mgr.upsert(upserts([{ vip: '10.96.0.10', port: 80, protocol: 'tcp', backends: [{ ip: '10.0.0.10', port: 8080 }] }])[0]!);
  await new LBOps(dp.lbMaps, { algorithm: 'random', maglevTableSize: 251, maxBackends: 100 }).update(mgr.frontends.due().map((o) => [o.key, o.value] as const));
  const v = await dp.verdict(7, 'egress', { src: '10.0.0.2', dst: '10.96.0.10', protocol: 6, dport: 80, sport: 1234, tcpFlags: 2 });
  t.match(v, { allowed: true, service: { backend: '10.0.0.10:8080' } });
  t.same(dp.conntrack.entries(), [], 'nothing written');
  t.same(await dp.dropCounters(), {});
});

t.test('random selection spreads new flows over the backends', async (t) => {
  const dp = new MemoryDatapath();
  dp.maps.setPolicy(7, [{ identity: 0, direction: 'egress', protocol: 0, port: 0, deny: false }]);
  const mgr = new LBServiceManager();
  mgr.upsert(upserts([{ vip: '10.96.0.10', port: 80, protocol: 'tcp', backends: [1, 2, 3].map((i) => ({ ip: `10.0.1.${i}`, port: 8080 })) }])[0]!);
  await new LBOps(dp.lbMaps, { algorithm: 'random', maglevTableSize: 251, maxBackends: 100 }).update(mgr.frontends.due().map((o) => [o.key, o.value] as const));
  const hits = new Map<string, number>();
  for (let i = 0; i < 300; i++) {
    const b = dp.process(7, 'egress', { src: '10.0.0.2', dst: '10.96.0.10', protocol: 6, dport: 80, sport: 20000 + i, tcpFlags: 2 }).verdict.service!.backend;
    hits.set(b, (hits.get(b) ?? 0) + 1);
  }
  t.equal(hits.size, 3);
  for (const [b, n] of hits) t.ok(n >= 45, `${b}: ${n} of 300 (>= 15%)`);
});

t.test('Maglev: a flow keeps its backend across table rebuilds unless its backend goes', async (t) => {
  const dp = new MemoryDatapath({ random: () => 0 });
  dp.maps.setPolicy(7, [{ identity: 0, direction: 'egress', protocol: 0, port: 0, deny: false }]);
  const mgr = new LBServiceManager();
  const ops = new LBOps(dp.lbMaps, { algorithm: 'maglev', maglevTableSize: 251, maxBackends: 100 });
  const five = upserts([{ vip: '10.96.0.10', port: 80, protocol: 'tcp', backends: [1, 2, 3, 4, 5].map((i) => ({ ip: `10.0.1.${i}`, port: 8080 })) }])[0]!;
  mgr.upsert(five);
  await ops.update(mgr.frontends.due().map((o) => [o.key, o.value] as const));
  const pick = (sport: number) => dp.verdict(7, 'egress', { src: '10.0.0.2', dst: '10.96.0.10', protocol: 6, dport: 80, sport, tcpFlags: 2 }).then((v) => v.service!.backend);
  const before = await Promise.all(Array.from({ length: 500 }, (_, i) => pick(30000 + i)));
  t.ok(new Set(before).size === 5, 'Maglev uses every backend');
  mgr.setBackends('default/svc0', five.backends.filter((b) => b.address.ip !== '10.0.1.3'));
  await ops.update(mgr.frontends.due().map((o) => [o.key, o.value] as const));
  const after = await Promise.all(Array.from({ length: 500 }, (_, i) => pick(30000 + i)));
  const moved = before.filter((b, i) => b !== after[i] && b !== '10.0.1.3:8080').length;
  t.ok(moved / 500 <= 0.05, `${moved} of the flows whose backend stayed moved (Maglev keeps them)`);
});
