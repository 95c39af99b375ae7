// The CRD identity GC round (mark, grace, delete with preconditions; CiliumEndpoint-named and
// held identities survive; only the leader writes) and the Lease election (one holder, renewals,
// no takeover before the lease duration by the follower's own clock, takeover after, release).
import t from 'tap';
import { silentLogger } from '../../src/hive/index.js';
import { LocalIdentityAllocator, parseLabels } from '../../src/cells/identity/index.js';
import { CrdIdentityBackend, CrdIdentityGC, HEARTBEAT_ANNOTATION, LeaseElector, electionTiming, identityObject } from '../../src/cells/k8s-identity/index.js';
import type { CiliumEndpoint } from '../../src/cells/k8s-endpoint-sync/index.js';
import { FakeApiserver } from './fake-apiserver.js';

const flush = async (): Promise<void> => {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
};

function cep(id: number): CiliumEndpoint {
  return { metadata: { name: `p${id}`, namespace: 'default' }, status: { identity: { id, labels: [] } } };
}

t.test('GC: unused identities marked, deleted after the grace period; CiliumEndpoint-named and held ones survive', async (t) => {
  const api = new FakeApiserver();
  for (const [id, app] of [[300, 'a'], [301, 'b'], [302, 'c'], [303, 'd']] as const) await api.create(identityObject(id, [`k8s:app=${app}`]));
  // an agent holds 302
  const backend = new CrdIdentityBackend(api, { synced: Promise.resolve() }, silentLogger());
  api.watch((ev) => backend.onEvent(ev));
  const alloc = new LocalIdentityAllocator(backend, silentLogger());
  const sub = backend.events$.subscribe((ev) => alloc.onBackendEvent(ev)); // not a job: a unit test
  t.teardown(() => sub.unsubscribe());
  await alloc.load();
  t.equal((await alloc.allocate(parseLabels(['k8s:app=c']))).identity.id, 302);
  let now = Date.parse('2026-11-27T10:00:00Z');
  let leader = true;
  const endpoints = [cep(301)];
  const gc = new CrdIdentityGC({
    api, graceMs: 60_000, holder: 'node-a', log: silentLogger(), now: () => now, isLeader: () => leader,
    identities: async () => [...api.identities.values()], endpoints: async () => endpoints,
  });
  t.match(await gc.round(), { skipped: false, marked: 3, deleted: 0, alive: 1 }, 'round 1: 300, 302, 303 marked; 301 named by a CiliumEndpoint');
  await flush();
  t.equal(api.identities.get('302')?.metadata.annotations?.[HEARTBEAT_ANNOTATION], undefined, 'the holder removed its mark');
  t.ok(api.identities.get('300')?.metadata.annotations?.[HEARTBEAT_ANNOTATION]);
  now += 30_000;
  t.match(await gc.round(), { marked: 1, deleted: 0 }, 'within the grace period: nothing deleted (302 marked again)');
  await flush();
  // 303 is taken by a new endpoint's CiliumEndpoint before the grace ends
  endpoints.push(cep(303));
  now += 31_000;
  t.match(await gc.round(), { deleted: 1, unmarked: 1 }, 'past the grace: 300 deleted; 303 named again: its mark removed');
  t.notOk(api.identities.has('300'));
  t.ok(api.identities.has('301') && api.identities.has('302') && api.identities.has('303'));
  t.equal(api.identities.get('303')?.metadata.annotations?.[HEARTBEAT_ANNOTATION], undefined);

  // a delete whose preconditions fail (the object changed after the GC read it): kept
  const stale = { ...api.identities.get('302')!, metadata: { ...api.identities.get('302')!.metadata, annotations: { [HEARTBEAT_ANNOTATION]: '2026-01-01T00:00:00.000Z' }, resourceVersion: '1' } };
  const gc2 = new CrdIdentityGC({
    api, graceMs: 1, holder: 'node-a', log: silentLogger(), now: () => now, isLeader: () => true,
    identities: async () => [stale], endpoints: async () => [],
  });
  t.match(await gc2.round(), { deleted: 0 }, 'changed since read: the precondition keeps it');
  t.ok(api.identities.has('302'));

  leader = false;
  const before = api.calls.length;
  t.match(await gc.round(), { skipped: true }, 'not the leader: skipped');
  t.equal(api.calls.length, before, 'no request');
});

t.test('Lease election: one holder; renewals; no takeover before the duration; takeover after; release hands over at once', async (t) => {
  const api = new FakeApiserver();
  const timing = electionTiming(15_000);
  t.same(timing, { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryMs: 2000 });
  let clock = 0;
  const a = new LeaseElector(api, 'kube-system', 'gc', 'node-a', timing, silentLogger(), () => clock);
  const b = new LeaseElector(api, 'kube-system', 'gc', 'node-b', timing, silentLogger(), () => clock);
  t.equal(await a.step(), true, 'a creates the Lease');
  t.equal(await b.step(), false, 'b follows');
  t.equal(api.leases.get('kube-system/gc')?.spec?.holderIdentity, 'node-a');
  t.match(api.leases.get('kube-system/gc')?.spec, { leaseDurationSeconds: 15, leaseTransitions: 0 });
  t.match(api.leases.get('kube-system/gc')?.spec?.renewTime, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/, 'MicroTime');
  for (let i = 0; i < 10; i++) {
    clock += 2000;
    t.equal(await a.step(), true);
    t.equal(await b.step(), false);
  }
  t.ok(a.isLeader() && !b.isLeader());
  // a stops renewing (crashed); b takes over only a whole duration after it last saw a change
  clock += 2000;
  t.equal(await b.step(), false);
  clock += 11_000;
  t.equal(a.isLeader(), false, 'a counts itself leader no longer than the renew deadline');
  t.equal(await b.step(), false, '13 s without a change: not yet');
  clock += 2000;
  t.equal(await b.step(), true, '15 s: b takes over');
  t.match(api.leases.get('kube-system/gc')?.spec, { holderIdentity: 'node-b', leaseTransitions: 1 });
  t.equal(await a.step(), false, 'a, back, follows');
  await b.release();
  t.equal(api.leases.get('kube-system/gc')?.spec?.holderIdentity, '', 'released');
  t.equal(await a.step(), true, 'taken over at once');
  api.down = true;
  clock += 2000;
  t.equal(await a.step(), true, 'a failed renewal within the deadline: still leader');
  clock += 9000;
  t.equal(await a.step(), false, 'past the renew deadline without a renewal: not the leader');
});
