import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { TestLike } from '../../src/hive/index.js';
import { LBError, LBServiceManager, ServiceStore, apiServiceKey, formatL3n4, lbConfigSchema } from '../../src/cells/loadbalancer/index.js';
import { be, fe, svc, upsert } from './helpers.js';

/** A store file in a temporary directory; `open()` makes a store on it. */
function tempStore(t: TestLike): { file: string; open: () => ServiceStore } {
  const dir = mkdtempSync(join(tmpdir(), 'cellium-lb-'));
  const opened: ServiceStore[] = [];
  t.teardown(async () => {
    // a store's coalesced write may still be pending: let it land before the directory goes
    for (const s of opened) await s.flush().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });
  const file = join(dir, 'services.json');
  return { file, open: () => { const s = new ServiceStore(file); opened.push(s); return s; } };
}

t.test('an upsert gives each frontend an ID and desired state with its backends, sorted', async (t) => {
  const m = new LBServiceManager();
  const [f] = m.upsert(upsert('default/web', '10.96.0.10', 80, [be('10.0.1.3', 8080), be('10.0.1.1', 8080)]));
  t.equal(f!.id, 1);
  const s = m.get(1)!;
  t.equal(s.state, 'pending');
  t.same(s.frontend.backends.map((b) => b.address.ip), ['10.0.1.1', '10.0.1.3']);
  t.equal(m.frontends.get('10.96.0.10:80/TCP')!.value.id, 1);
  const [g] = m.upsert(upsert('default/db', '10.96.0.11', 5432, []));
  t.equal(g!.id, 2, 'the next service gets the next ID');
  const [again] = m.upsert(upsert('default/web', '10.96.0.10', 80, [be('10.0.1.1', 8080)]));
  t.equal(again!.id, 1, 'an update keeps the ID');
  t.same(m.get(1)!.frontend.backends.length, 1);
});

t.test('port names select the backends of each frontend; families never mix', async (t) => {
  const m = new LBServiceManager();
  m.upsert({
    service: svc('default/web'),
    frontends: [fe('10.96.0.10', 80, 'http'), fe('10.96.0.10', 443, 'https'), fe('fd00::10', 80, 'http')],
    backends: [be('10.0.1.1', 8080, 'active', 'http'), be('10.0.1.1', 8443, 'active', 'https'), be('fd00::1', 8080, 'active', 'http')],
  });
  const [http, https, http6] = m.list();
  t.same(http!.frontend.backends.map((b) => b.address.port), [8080]);
  t.same(https!.frontend.backends.map((b) => b.address.port), [8443]);
  t.same(http6!.frontend.backends.map((b) => b.address.ip), ['fd00::1']);
});

t.test('a frontend address belongs to one service; bad input names the field', async (t) => {
  const m = new LBServiceManager();
  m.upsert(upsert('default/web', '10.96.0.10', 80, []));
  t.throws(() => m.upsert(upsert('default/other', '10.96.0.10', 80, [])), { code: 'invalid-frontend', field: '/frontends/0/address' });
  t.throws(() => m.upsert(upsert('default/x', '10.96.0.300', 80, [])), { code: 'invalid-frontend', field: '/frontends/0/address/ip' });
  t.throws(() => m.upsert(upsert('default/x', '10.96.0.12', 70000, [])), { code: 'invalid-frontend', field: '/frontends/0/address/port' });
  t.throws(() => m.upsert(upsert('default/x', '10.96.0.12', 80, [be('10.0.1.1', 0)])), { code: 'invalid-backend', field: '/backends/0/address/port' });
  t.throws(() => m.upsert(upsert('default/x', '10.96.0.12', 80, [be('fd00::1', 80)])), { code: 'invalid-backend', field: '/backends/0/address/ip' });
  t.throws(() => m.upsert(upsert('default/x', '10.96.0.12', 80, [{ ...be('10.0.1.1', 80), state: 'gone' as never }])), LBError);
  t.equal(m.list().length, 1, 'nothing half-applied');
});

t.test('upsertById pins IDs, moves a frontend, refuses a taken address; delete by ID and by service', async (t) => {
  const m = new LBServiceManager();
  t.equal(m.upsertById(7, { ...upsert(apiServiceKey(7), '10.96.0.20', 80, [be('10.0.1.1', 80)]), service: svc(apiServiceKey(7), { source: 'api' }) }), true);
  t.equal(m.upsertById(7, { ...upsert(apiServiceKey(7), '10.96.0.21', 80, [be('10.0.1.1', 80)]), service: svc(apiServiceKey(7), { source: 'api' }) }), false);
  t.same(m.list().map((s) => [s.frontend.id, formatL3n4(s.frontend.address)]), [[7, '10.96.0.21:80/TCP']]);
  t.notOk(m.frontends.get('10.96.0.20:80/TCP'), 'the old address is no longer desired');
  t.throws(() => m.upsertById(8, upsert(apiServiceKey(8), '10.96.0.21', 80, [])), { code: 'invalid-frontend' });
  const [f] = m.upsert(upsert('default/web', '10.96.0.30', 80, []));
  t.not(f!.id, 7);
  t.equal(m.deleteById(7), true);
  t.equal(m.deleteById(7), false);
  t.equal(m.deleteService('default/web'), true);
  t.same(m.list(), []);
  t.same(m.frontends.deletions().sort(), ['10.96.0.20:80/TCP', '10.96.0.21:80/TCP', '10.96.0.30:80/TCP'], 'the reconciler deletes all three addresses');
});

t.test('backends set before their service wait for it', async (t) => {
  const m = new LBServiceManager();
  m.setBackends('default/web', [be('10.0.1.1', 80), be('10.0.1.1', 80)]);
  m.upsert({ service: svc('default/web'), frontends: [fe('10.96.0.10', 80)], backends: m.backends('default/web') });
  t.equal(m.get(1)!.frontend.backends.length, 1, 'duplicates collapse');
  m.setBackends('default/web', [be('10.0.1.1', 80, 'terminating'), be('10.0.1.2', 80)]);
  t.same(m.get(1)!.frontend.backends.map((b) => b.state), ['terminating', 'active']);
});

t.test('services persist with the same IDs across restarts', async (t) => {
  const { open } = tempStore(t);
  const a = new LBServiceManager(65535, open());
  await a.restore();
  a.upsert(upsert('default/one', '10.96.0.1', 80, [be('10.0.1.1', 80)]));
  a.upsert(upsert('default/two', '10.96.0.2', 80, [be('10.0.1.2', 80)]));
  a.upsertById(42, upsert(apiServiceKey(42), '10.96.0.42', 53, []));
  a.deleteService('default/one');
  await a.flushStore();
  const b = new LBServiceManager(65535, open());
  t.equal(await b.restore(), 2);
  t.same(b.list().map((s) => [s.frontend.id, s.frontend.serviceKey, s.frontend.backends.length]), [[2, 'default/two', 1], [42, 'api:42', 0]]);
  const [f] = b.upsert(upsert('default/three', '10.96.0.3', 80, []));
  t.not(f!.id, 2, 'a new service does not take a restored ID');
  t.not(f!.id, 42);
});

t.test('NodePort surrogates: only for type NodePort, kept across restarts with their IDs', async (t) => {
  const { open } = tempStore(t);
  const a = new LBServiceManager(65535, open());
  await a.restore();
  const np = (ip: string) => ({ ...fe(ip, 30080), type: 'NodePort' as const });
  t.throws(() => a.upsert({ service: svc('default/np'), frontends: [fe('10.96.0.5', 80), fe('0.0.0.0', 30080)], backends: [] }), { code: 'invalid-frontend', field: '/frontends/1/address/ip', message: /0\.0\.0\.0 cannot be a service frontend of type ClusterIP: it is an unspecified .*or give it type NodePort/ }, 'a ClusterIP on the surrogate: refused');
  t.throws(() => a.upsert({ service: svc('default/np'), frontends: [{ ...np('0.0.0.0'), address: { ...np('0.0.0.0').address, port: 0 } }], backends: [] }), { field: '/frontends/0/address/port', message: /give the node port/ }, 'a surrogate needs its port');
  t.throws(() => a.upsert({ service: svc('default/np'), frontends: [np('127.0.0.1')], backends: [] }), { field: '/frontends/0/address/ip', message: /loopback/ }, 'NodePort on loopback: refused');
  const ids = a.upsert({ service: svc('default/np'), frontends: [fe('10.96.0.5', 80), np('0.0.0.0'), np('::')], backends: [be('10.0.1.5', 8080)] }).map((f) => f.id);
  await a.flushStore();
  const b = new LBServiceManager(65535, open());
  t.equal(await b.restore(), 1);
  t.same(b.list().map((s) => [s.frontend.id, s.frontend.type, formatL3n4(s.frontend.address), s.frontend.backends.length]), [
    [ids[0], 'ClusterIP', '10.96.0.5:80/TCP', 1], [ids[1], 'NodePort', '0.0.0.0:30080/TCP', 1], [ids[2], 'NodePort', '[::]:30080/TCP', 0],
  ], 'the IPv4 surrogate has the IPv4 backend, the IPv6 one none');
});

t.test('node ports: only from --node-port-range (they take the port on every node address, loopback included)', async (t) => {
  const np = (ip: string, port: number) => ({ ...fe(ip, port), type: 'NodePort' as const });
  const d = new LBServiceManager();
  t.throws(() => d.upsert({ service: svc('default/ssh'), frontends: [np('0.0.0.0', 22)], backends: [] }), { code: 'invalid-frontend', field: '/frontends/0/address/port', message: /node port 22 is outside --node-port-range 30000-32767; fix: give a node port from 30000 to 32767, or widen --node-port-range/ }, 'the default range is Kubernetes\' 30000-32767');
  t.throws(() => d.check({ service: svc('default/ssh'), frontends: [np('::', 32768)], backends: [] }), { code: 'invalid-frontend', field: '/frontends/0/address/port' }, 'check() says the same without changing anything');
  t.same(d.list(), []);
  t.equal(d.upsert({ service: svc('default/np'), frontends: [np('0.0.0.0', 30000), np('::', 32767)], backends: [] }).length, 2, 'both ends of the range');
  t.equal(d.upsert({ service: svc('default/web'), frontends: [{ ...fe('10.96.0.5', 22), type: 'ExternalIPs' as const }], backends: [] }).length, 1, 'the range is for the surrogates alone');
  const wide = new LBServiceManager(65535, undefined, [1000, 2000]);
  t.equal(wide.upsert({ service: svc('default/np'), frontends: [np('0.0.0.0', 1500)], backends: [] }).length, 1, 'another --node-port-range');
  t.throws(() => wide.upsert({ service: svc('default/np2'), frontends: [np('0.0.0.0', 30080)], backends: [] }), { message: /outside --node-port-range 1000-2000/ });
  const f = lbConfigSchema.nodePortRange;
  t.same(f.default, [30000, 32767]);
  t.same(f.parse('1000,2000'), [1000, 2000]);
  t.same(f.parse('1000-2000'), [1000, 2000], 'min-max as Kubernetes writes it');
  t.same(f.parse(['1000', '2000']), [1000, 2000], 'a list in a config file');
  for (const bad of ['2000,1000', '0,100', '1,70000', '30000', '1,2,3', 'a,b', ''])
    t.throws(() => f.parse(bad), /expected min,max: two ports 1\.\.65535 with min <= max/, `--node-port-range=${bad}`);
});

t.test('a store that cannot be used stops the restore with the fix', async (t) => {
  const { file, open } = tempStore(t);
  writeFileSync(file, '{"version":1,"services":[{"service":{"key":"a"},"frontends":[{"id":1,"address":{}},{"id":1,"address":{}}],"backends":[]}]}');
  await t.rejects(new LBServiceManager(65535, open()).restore(), /repeats service ID 1.*fix: restore/);
  writeFileSync(file, 'not json');
  await t.rejects(new LBServiceManager(65535, open()).restore(), { code: 'store' });
  t.match(readFileSync(file, 'utf8'), 'not json', 'the store is left for the operator');
});

t.test('IDs run out at maxId', async (t) => {
  const m = new LBServiceManager(2);
  m.upsert(upsert('a/a', '10.96.0.1', 80, []));
  m.upsert(upsert('a/b', '10.96.0.2', 80, []));
  t.throws(() => m.upsert(upsert('a/c', '10.96.0.3', 80, [])), /all 2 service IDs are in use/);
  m.deleteService('a/a');
  t.equal(m.upsert(upsert('a/c', '10.96.0.3', 80, []))[0]!.id, 1);
});
