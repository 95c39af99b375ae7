// The CiliumIdentity backend against an in-memory apiserver (fake-apiserver.ts): the object's
// shape, create-only allocation and its conflict paths (409 with the same or another label set),
// two agents racing with stale caches, a label set with two numbers, keeping held identities
// alive (GC mark removed, deleted ones created again), and failing closed when the apiserver is down.
import t from 'tap';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '../../src/hive/index.js';
import { LocalIdentityAllocator, parseLabels } from '../../src/cells/identity/index.js';
import { CrdIdentityBackend, HEARTBEAT_ANNOTATION, HeldJournal, identityObject, journalFile } from '../../src/cells/k8s-identity/index.js';
import { FakeApiserver } from './fake-apiserver.js';

async function agent(api: FakeApiserver, timeoutMs = 2000) {
  const backend = new CrdIdentityBackend(api, { synced: Promise.resolve() }, silentLogger());
  const watch = api.watch((ev) => backend.onEvent(ev));
  const alloc = new LocalIdentityAllocator(backend, silentLogger(), { timeoutMs });
  // the identity cell follows events$ with an observer job; here the test is the cell
  const sub = backend.events$.subscribe((ev) => alloc.onBackendEvent(ev)); // not a job: a unit test
  await alloc.load();
  return { backend, alloc, watch, stop: () => sub.unsubscribe() };
}

const P = parseLabels(['k8s:app=web', 'k8s:io.kubernetes.pod.namespace=default']);

t.test('a new label set: a CiliumIdentity named by its number, security-labels, the k8s labels in metadata', async (t) => {
  const api = new FakeApiserver();
  const a = await agent(api);
  const { identity, isNew } = await a.alloc.allocate(parseLabels(['k8s:app=web', 'k8s:io.kubernetes.pod.namespace=default', 'k8s:io.cilium.k8s.namespace.labels.team=a', 'container:x']));
  t.ok(isNew);
  t.ok(identity.id >= 256 && identity.id <= 65535);
  const obj = api.identities.get(String(identity.id))!;
  t.same(obj['security-labels'], {
    'container:x': '', 'k8s:app': 'web', 'k8s:io.cilium.k8s.namespace.labels.team': 'a', 'k8s:io.kubernetes.pod.namespace': 'default',
  });
  t.same(obj.metadata.labels, { app: 'web', 'io.kubernetes.pod.namespace': 'default' }, 'k8s labels only, the namespace\'s own labels left out');
  t.same(api.calls, [`create ${identity.id}`], 'one request');
  // a second reference: no request
  t.equal((await a.alloc.allocate(P)).identity.id !== identity.id, true);
  t.equal((await a.alloc.allocate(parseLabels(['k8s:app=web', 'k8s:io.kubernetes.pod.namespace=default', 'k8s:io.cilium.k8s.namespace.labels.team=a', 'container:x']))).identity.id, identity.id);
  t.equal(api.calls.filter((c) => c === `create ${identity.id}`).length, 1);
});

t.test('two agents race for one label set with stale caches: they offer the same number, one creates it, the other reads it (409) and takes it', async (t) => {
  const api = new FakeApiserver();
  const a = await agent(api);
  const b = await agent(api);
  a.watch.pause();
  b.watch.pause();
  const [ra, rb] = await Promise.all([a.alloc.allocate(P), b.alloc.allocate(P)]);
  t.equal(ra.identity.id, rb.identity.id, 'agree');
  t.equal([...api.identities.values()].length, 1, 'one CiliumIdentity');
  t.same(api.calls.filter((c) => c.startsWith('create')), [`create ${ra.identity.id}`, `create ${ra.identity.id}`], 'both offered the hashed number');
  t.equal(a.backend.stats.created + b.backend.stats.created, 1);
  t.equal(a.backend.stats.taken + b.backend.stats.taken, 1, 'the loser got 409 and read the object');
  a.watch.resume();
  b.watch.resume();
  t.equal(a.alloc.lookupByLabels(P)?.id, ra.identity.id);
});

t.test('the number is taken by another label set (409): the next number; the taken one is learned', async (t) => {
  const api = new FakeApiserver();
  const probe = await agent(api);
  const hashed = (await probe.alloc.allocate(P)).identity.id;
  await probe.alloc.release(hashed);
  api.remove(String(hashed));
  const a = await agent(api);
  a.watch.pause();
  // another agent created the hashed number for another label set; a does not know it yet
  await api.create(identityObject(hashed, ['k8s:app=other']));
  const got = await a.alloc.allocate(P);
  t.not(got.identity.id, hashed);
  t.equal(got.identity.id, hashed === 65535 ? 256 : hashed + 1, 'the next number of the sequence');
  t.same(a.alloc.lookup(hashed)?.labels, ['k8s:app=other'], 'the 409\'s holder is known');
  t.same(api.identities.get(String(hashed))?.['security-labels'], { 'k8s:app': 'other' }, 'not overwritten');
});

t.test('1,000 label sets wanted by two agents with live watches: one object per set, agents agree', async (t) => {
  const api = new FakeApiserver();
  const a = await agent(api);
  const b = await agent(api);
  const sets = Array.from({ length: 1000 }, (_, i) => parseLabels([`k8s:app=a${i}`, `k8s:tier=t${i % 7}`]));
  const [ia, ib] = await Promise.all([a, b].map(async (x, j) => {
    const out: number[] = [];
    const order = j === 0 ? sets : [...sets].reverse();
    await Promise.all(order.map(async (s) => out.push((await x.alloc.allocate(s)).identity.id)));
    return j === 0 ? out : out;
  }));
  const byLabels = new Map<string, string[]>();
  for (const o of api.identities.values()) {
    const k = JSON.stringify(o['security-labels']);
    byLabels.set(k, [...(byLabels.get(k) ?? []), o.metadata.name]);
  }
  t.equal(byLabels.size, 1000);
  t.same([...byLabels.values()].filter((v) => v.length > 1), [], 'no duplicates');
  let disagree = 0;
  for (const s of sets) if (a.alloc.lookupByLabels(s)?.id !== b.alloc.lookupByLabels(s)?.id) disagree++;
  t.equal(disagree, 0);
  t.equal(ia!.length + ib!.length, 2000);
});

t.test('a label set with two numbers: both known by number, the lowest for new references; a holder of the other keeps it until released', async (t) => {
  const api = new FakeApiserver();
  await api.create(identityObject(400, ['k8s:app=web', 'k8s:io.kubernetes.pod.namespace=default']));
  const a = await agent(api);
  t.equal((await a.alloc.allocate(P)).identity.id, 400);
  await api.create(identityObject(300, ['k8s:app=web', 'k8s:io.kubernetes.pod.namespace=default']));
  t.equal(a.alloc.lookup(300)?.labels.join(','), 'k8s:app=web,k8s:io.kubernetes.pod.namespace=default', 'the second number is known');
  t.equal(a.backend.stats.duplicates, 1, 'detected');
  t.equal((await a.alloc.allocate(P)).identity.id, 400, 'held here: kept for its references');
  await a.alloc.release(400);
  await a.alloc.release(400);
  t.equal(a.alloc.lookupByLabels(P)?.id, 300, 'released: the lowest is the label set\'s');
  t.equal((await a.alloc.allocate(P)).identity.id, 300);
  const b = await agent(api);
  t.equal((await b.alloc.allocate(P)).identity.id, 300, 'every agent takes the lowest');
  t.equal(b.alloc.lookup(400)?.id, 400, 'and knows the other by number');
  api.remove('400');
  t.equal(a.alloc.lookup(400), undefined, 'collected: forgotten');
  t.equal(a.alloc.lookupByLabels(P)?.id, 300);
});

t.test('held identities stay alive: the GC\'s mark is removed, a deleted one is created again', async (t) => {
  const api = new FakeApiserver();
  const a = await agent(api);
  const id = (await a.alloc.allocate(P)).identity.id;
  const o = api.identities.get(String(id))!;
  await api.mark(String(id), o.metadata.resourceVersion!, false, '2026-01-01T00:00:00.000Z');
  await new Promise((r) => setImmediate(r));
  await new Promise((r) => setImmediate(r));
  t.equal(api.identities.get(String(id))?.metadata.annotations?.[HEARTBEAT_ANNOTATION], undefined, 'mark removed by the holder');
  t.equal(a.backend.stats.unmarked, 1);
  api.remove(String(id));
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
  t.ok(api.identities.has(String(id)), 'created again');
  t.equal(a.backend.stats.recreated, 1);
  // released: no longer kept alive
  await a.alloc.release(id);
  api.remove(String(id));
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
  t.notOk(api.identities.has(String(id)), 'not held: stays deleted');
  t.equal(a.alloc.lookup(id), undefined);
});

t.test('an unused identity marked by the GC: taking it again removes the mark first', async (t) => {
  const api = new FakeApiserver();
  await api.create(identityObject(500, ['k8s:app=web', 'k8s:io.kubernetes.pod.namespace=default']));
  await api.mark('500', api.identities.get('500')!.metadata.resourceVersion!, false, '2026-01-01T00:00:00.000Z');
  const a = await agent(api);
  t.equal((await a.alloc.allocate(P)).identity.id, 500);
  t.equal(api.identities.get('500')?.metadata.annotations?.[HEARTBEAT_ANNOTATION], undefined);
});

t.test('fail closed: the apiserver down, a new label set fails after the time limit naming it; held ones keep working', async (t) => {
  const api = new FakeApiserver();
  const a = await agent(api, 300);
  const web = (await a.alloc.allocate(P)).identity.id;
  api.down = true;
  const started = Date.now();
  await t.rejects(a.alloc.allocate(parseLabels(['k8s:app=new'])), /no identity for labels "k8s:app=new" within 300 ms \(--identity-allocation-timeout\): the apiserver did not answer \(kubernetes: .*ECONNREFUSED.*\); nothing was allocated: check the apiserver/);
  t.ok(Date.now() - started >= 290, 'retried until the time limit');
  t.equal((await a.alloc.allocate(P)).identity.id, web, 'a held identity: no request needed');
  api.down = false;
  const late = [...api.identities.values()].filter((o) => o['security-labels']?.['k8s:app'] === 'new');
  t.same(late, [], 'nothing was created');
  t.ok((await a.alloc.allocate(parseLabels(['k8s:app=new']))).identity.id >= 256, 'works again once it answers');
});

t.test('restart without the apiserver: the journal\'s held identities are taken at once; checked once listed (deleted ones created again, a taken number dropped)', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cellium-crd-journal-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const api = new FakeApiserver();
  const journal = () => new HeldJournal(journalFile(dir));
  const first = new CrdIdentityBackend(api, { synced: Promise.resolve() }, silentLogger(), journal());
  api.watch((ev) => first.onEvent(ev));
  const a1 = new LocalIdentityAllocator(first, silentLogger());
  await a1.load();
  const web = (await a1.allocate(P)).identity.id;
  const db = (await a1.allocate(parseLabels(['k8s:app=db']))).identity.id;
  const gone = (await a1.allocate(parseLabels(['k8s:app=gone']))).identity.id;
  await a1.release(gone);
  await first.close();
  t.same(JSON.parse(readFileSync(journalFile(dir), 'utf8')).held.map((h: { id: number }) => h.id).sort(), [web, db].sort(), 'the journal holds what is held');

  // while "down": db deleted and its number taken by another label set; web deleted
  api.remove(String(db));
  await api.create(identityObject(db, ['k8s:app=thief']));
  api.remove(String(web));
  api.down = true;
  let list!: () => void;
  const synced = new Promise<void>((r) => (list = r));
  const second = new CrdIdentityBackend(api, { synced }, silentLogger(), journal(), 50);
  const a2 = new LocalIdentityAllocator(second, silentLogger(), { timeoutMs: 200 });
  const sub = second.events$.subscribe((ev) => a2.onBackendEvent(ev)); // not a job: a unit test
  t.teardown(() => sub.unsubscribe());
  await a2.load();
  const calls = api.calls.length;
  t.equal((await a2.allocate(P, { prefer: web })).identity.id, web, 'restored endpoint: its number, without the apiserver');
  t.equal(api.calls.length, calls, 'no request');
  await t.rejects(a2.allocate(parseLabels(['k8s:app=new'])), /apiserver did not answer/, 'a new one still fails closed');
  // the apiserver answers: listed, checked
  api.down = false;
  api.watch((ev) => second.onEvent(ev));
  list();
  for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
  t.same(api.identities.get(String(web))?.['security-labels'], { 'k8s:app': 'web', 'k8s:io.kubernetes.pod.namespace': 'default' }, 'the held one deleted meanwhile: created again');
  t.same(api.identities.get(String(db))?.['security-labels'], { 'k8s:app': 'thief' }, 'the taken number is not overwritten');
  t.notOk(second.held().has(db), 'and no longer held');
  await second.close();
  t.same(JSON.parse(readFileSync(journalFile(dir), 'utf8')).held.map((h: { id: number }) => h.id), [web]);
});

t.test('an unreadable journal stops the load naming the file and the fix', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cellium-crd-journal-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(journalFile(dir), '{"version":1,"held":[{"id":"x"}]}');
  const b = new CrdIdentityBackend(new FakeApiserver(), { synced: Promise.resolve() }, silentLogger(), new HeldJournal(journalFile(dir)));
  await t.rejects(b.load(), /identity journal .*identities-crd\.json is unreadable \(\/held\/0 must be .*\): move it aside/);
});
