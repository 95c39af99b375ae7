// Identities in etcd (Cilium's layout): the key layout and its leases, the same labels giving the
// same number on every agent, identities of other agents known through the watch, releases
// withdrawing only this node's claim, and 3 agents allocating 10,000 overlapping label sets at once
// with 0 conflicts checked from etcd's own contents.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { invoke, testHive, type TestLike } from '../../src/hive/index.js';
import { statedirCell } from '../../src/cells/statedir/index.js';
import { identityCell, IdentityAllocatorToken, parseLabels, type IdentityAllocator } from '../../src/cells/identity/index.js';
import { GC_LOCK, KVIdentityGC, kvstoreCell, KEYS } from '../../src/cells/kvstore/index.js';
import { silentLogger } from '../../src/hive/index.js';
import { etcdSkip, startEtcd, type TestEtcd } from '../kvstore/etcd.js';
import { until as pollUntil, type Poll } from '../until.js';

const use = invoke('use-identity', (_a: IdentityAllocator) => undefined, IdentityAllocatorToken);

async function agent(t: TestLike, etcd: TestEtcd, node: string): Promise<IdentityAllocator> {
  const dir = mkdtempSync(join(tmpdir(), 'cellium-kv-identity-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const h = await testHive(t, [statedirCell, kvstoreCell, identityCell, use], {
    config: { 'state-dir': dir, kvstore: 'etcd', 'kvstore-opt': `etcd.config=${etcd.configFile()}`, 'node-name': node },
  });
  return h.get(IdentityAllocatorToken);
}

const until = <T>(what: string, fn: Poll<T>, ms = 10_000): Promise<T> => pollUntil(what, fn, ms, 20);

t.test('Cilium\'s layout: id/<ID> holds the sorted labels, value/<labels>/<node> the ID under a lease', { skip: etcdSkip() }, async (t) => {
  const etcd = await startEtcd(t);
  const a = await agent(t, etcd, 'node-a');
  const { identity, isNew } = await a.allocate(parseLabels(['k8s:app=web', 'k8s:io.kubernetes.pod.namespace=default']));
  t.ok(isNew);
  t.ok(identity.id >= 256 && identity.id <= 65535, `global range: ${identity.id}`);
  const list = 'k8s:app=web;k8s:io.kubernetes.pod.namespace=default;';
  t.equal(await etcd.client.get(`${KEYS.identitiesId}${identity.id}`).string(), list);
  const id = await etcd.client.get(`${KEYS.identitiesId}${identity.id}`).exec();
  t.equal(String(id.kvs[0].lease), '0', 'the ID key has no lease');
  const claim = await etcd.client.get(`${KEYS.identitiesValue}${list}/node-a`).exec();
  t.equal(claim.kvs[0].value.toString(), String(identity.id));
  t.not(String(claim.kvs[0].lease), '0', 'the claim is leased');

  // a second reference does not write; the last release withdraws the claim, the ID stays known
  t.equal((await a.allocate(parseLabels(['k8s:app=web', 'k8s:io.kubernetes.pod.namespace=default']))).identity.id, identity.id);
  t.equal(await a.release(identity.id), false);
  t.equal(await a.release(identity.id), true);
  t.equal(await etcd.client.get(`${KEYS.identitiesValue}${list}/node-a`).string(), null, 'claim withdrawn');
  t.equal(await etcd.client.get(`${KEYS.identitiesId}${identity.id}`).string(), list, 'the ID key stays (identity GC removes it)');
  t.equal(a.lookup(identity.id)?.labels.join(','), 'k8s:app=web,k8s:io.kubernetes.pod.namespace=default');
  t.equal(await a.gc(), 0, 'nothing of this node to free');
  // allocated again: the same number, claimed again
  t.equal((await a.allocate(parseLabels(['k8s:app=web', 'k8s:io.kubernetes.pod.namespace=default']))).identity.id, identity.id);
  t.equal(await etcd.client.get(`${KEYS.identitiesValue}${list}/node-a`).string(), String(identity.id));
});

t.test('two agents: the same labels get the same number; each knows the other\'s identities', { skip: etcdSkip() }, async (t) => {
  const etcd = await startEtcd(t);
  const a = await agent(t, etcd, 'node-a');
  const b = await agent(t, etcd, 'node-b');
  const web = await a.allocate(parseLabels(['k8s:app=web']));
  await until('b to see a\'s identity', () => b.lookup(web.identity.id) !== undefined);
  t.same(b.lookup(web.identity.id)?.labels, ['k8s:app=web']);
  t.equal(b.lookupByLabels(parseLabels(['k8s:app=web']))?.id, web.identity.id);
  const bWeb = await b.allocate(parseLabels(['k8s:app=web']));
  t.equal(bWeb.identity.id, web.identity.id);
  const claims = await etcd.client.getAll().prefix(`${KEYS.identitiesValue}k8s:app=web;/`).keys();
  t.same(claims.sort(), [`${KEYS.identitiesValue}k8s:app=web;/node-a`, `${KEYS.identitiesValue}k8s:app=web;/node-b`]);

  const db = await b.allocate(parseLabels(['k8s:app=db']));
  t.not(db.identity.id, web.identity.id);
  await until('a to see b\'s identity', () => a.lookup(db.identity.id) !== undefined);

  // deleted in etcd (what identity GC does) while unreferenced on a: a forgets it
  await b.release(db.identity.id);
  await etcd.client.delete().key(`${KEYS.identitiesId}${db.identity.id}`);
  await until('a to forget the deleted identity', () => a.lookup(db.identity.id) === undefined);
});

t.test('3 agents allocate 10,000 overlapping label sets concurrently: 0 conflicts in etcd', { skip: etcdSkip() }, async (t) => {
  const etcd = await startEtcd(t);
  const agents = [await agent(t, etcd, 'node-a'), await agent(t, etcd, 'node-b'), await agent(t, etcd, 'node-c')];
  const SETS = 10_000;
  // agent i takes the 5,000 sets from i*3,333 on (modulo 10,000): every set is wanted by one or two agents
  const wanted = agents.map((_, i) => Array.from({ length: SETS / 2 }, (_, j) => (i * Math.floor(SETS / 3) + j) % SETS));
  const got = agents.map(() => new Map<number, number>());
  const started = Date.now();
  await Promise.all(agents.map(async (alloc, i) => {
    const queue = [...wanted[i]];
    await Promise.all(Array.from({ length: 32 }, async () => {
      for (let n = queue.shift(); n !== undefined; n = queue.shift()) {
        const { identity } = await alloc.allocate(parseLabels([`k8s:app=a${n}`, `k8s:tier=t${n % 7}`]));
        got[i].set(n, identity.id);
      }
    }));
  }));
  const seconds = (Date.now() - started) / 1000;
  t.comment(`${agents.length * (SETS / 2)} allocations of ${new Set(wanted.flat()).size} distinct label sets in ${seconds.toFixed(1)} s (${Math.round((agents.length * SETS) / 2 / seconds)}/s)`);

  const ids = await etcd.client.getAll().prefix(KEYS.identitiesId).strings();
  const byLabels = new Map<string, string[]>();
  for (const [k, v] of Object.entries(ids)) byLabels.set(v, [...(byLabels.get(v) ?? []), k]);
  const twice = [...byLabels].filter(([, ks]) => ks.length > 1);
  t.same(twice, [], 'no label set has two IDs');
  t.equal(Object.keys(ids).length, byLabels.size, 'one ID key per label set (no ID has two label sets: keys are unique)');
  const distinct = new Set(wanted.flat());
  t.equal(byLabels.size, distinct.size, 'every wanted label set has an ID');
  const claims = await etcd.client.getAll().prefix(KEYS.identitiesValue).strings();
  let bad = 0;
  for (const [k, v] of Object.entries(claims)) {
    const list = k.slice(KEYS.identitiesValue.length, k.lastIndexOf('/'));
    if (ids[`${KEYS.identitiesId}${v}`] !== list) bad++;
  }
  t.equal(bad, 0, 'every claim names the ID whose key holds its label set');
  t.equal(Object.keys(claims).length, wanted.flat().length, 'one claim per agent and label set it allocated');
  let disagree = 0;
  for (const [i, m] of got.entries()) {
    for (const [n, id] of m) {
      if (ids[`${KEYS.identitiesId}${id}`] !== `k8s:app=a${n};k8s:tier=t${n % 7};`) disagree++;
      for (const other of got.slice(i + 1)) if (other.has(n) && other.get(n) !== id) disagree++;
    }
  }
  t.equal(disagree, 0, 'every agent got the number etcd holds, and agents agree');
});

t.test('identity GC: two rounds under a lock; claimed identities and those claimed again in between survive', { skip: etcdSkip() }, async (t) => {
  const etcd = await startEtcd(t);
  const a = await agent(t, etcd, 'node-a');
  const b = await agent(t, etcd, 'node-b');
  const x = (await a.allocate(parseLabels(['k8s:app=x']))).identity.id;
  const y = (await a.allocate(parseLabels(['k8s:app=y']))).identity.id;
  const z = (await a.allocate(parseLabels(['k8s:app=z']))).identity.id;
  await a.release(x);
  await a.release(z);
  await until('b to know x', () => b.lookup(x) !== undefined);
  const gc = new KVIdentityGC(etcd.client, silentLogger());
  t.same(await gc.run(), { skipped: false, marked: 2, deleted: 0 }, 'round 1 marks x and z');
  await a.allocate(parseLabels(['k8s:app=z'])); // z is claimed again before round 2
  t.same(await gc.run(), { skipped: false, marked: 0, deleted: 1 }, 'round 2 deletes x only');
  t.equal(await etcd.client.get(`${KEYS.identitiesId}${x}`).string(), null);
  t.equal(await etcd.client.get(`${KEYS.identitiesId}${y}`).string(), 'k8s:app=y;', 'claimed: kept');
  t.equal(await etcd.client.get(`${KEYS.identitiesId}${z}`).string(), 'k8s:app=z;', 'claimed again in between: kept');
  await until('both agents to forget x', () => a.lookup(x) === undefined && b.lookup(x) === undefined);
  t.equal(a.lookup(y)?.id, y);

  const other = await etcd.client.lock(GC_LOCK).ttl(30).acquire();
  t.same(await gc.run(), { skipped: true, marked: 0, deleted: 0 }, 'another agent holds the lock: nothing done');
  await other.release();
});
