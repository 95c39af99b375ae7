// The gated policy sync on a real Repository (a mock identity allocator): before the flush nothing
// reaches the repository (the restored policy stays exactly in force), the flush applies every
// kind's upserts, deletes and prunes as one repository change (one revision, none seen half), and
// afterwards events apply as they come; the cache-sync gate opens only once every
// resource synced and every holder released.
import t from 'tap';
import { silentLogger } from '../../src/hive/logger.js';
import { Repository, SelectorCache } from '../../src/cells/policy/index.js';
import { GatedPolicySync } from '../../src/cells/policy-k8s/gated.js';
import { PolicyReconciler, type PolicyKind, type PolicyObject } from '../../src/cells/policy-k8s/index.js';
import { CacheSyncGate, Resource, type K8sObject, type ListWatcher } from '../../src/cells/k8s/index.js';
import { HealthRegistry } from '../../src/hive/health.js';
import { MockAllocator } from '../policy/helpers.js';

function obj(kind: PolicyKind, name: string, cidr: string): PolicyObject {
  return {
    apiVersion: kind === 'NetworkPolicy' ? 'networking.k8s.io/v1' : 'cilium.io/v2', kind, metadata: { name, namespace: 'default', uid: name },
    spec: { endpointSelector: { matchLabels: { app: 'db' } }, ingress: [{ fromCIDR: [cidr] }] },
  } as PolicyObject;
}

const named = (kind: PolicyKind, name: string) => [`k8s:io.cilium.k8s.policy.derived-from=${kind}`, `k8s:io.cilium.k8s.policy.name=${name}`];

t.test('nothing applies before the flush; the flush puts upserts before deletes and prunes; then events apply at once', async (t) => {
  const alloc = new MockAllocator();
  const repo = new Repository(new SelectorCache(alloc), alloc);
  const cnp = new PolicyReconciler('CiliumNetworkPolicy', repo, silentLogger(), async () => undefined);
  const ccnp = new PolicyReconciler('CiliumClusterwideNetworkPolicy', repo, silentLogger(), async () => undefined);
  // restored: old (deleted while down, pruned at the flush) and gone (deleted by an event before the flush)
  cnp.apply('default/old', obj('CiliumNetworkPolicy', 'old', '10.1.0.0/16'));
  cnp.apply('default/gone', obj('CiliumNetworkPolicy', 'gone', '10.2.0.0/16'));
  const cache = new Set(['default/new']);
  const gated = new GatedPolicySync(new Map([
    ['CiliumNetworkPolicy', { rec: cnp, exists: (k: string) => cache.has(k) }],
    ['CiliumClusterwideNetworkPolicy', { rec: ccnp, exists: () => false }],
  ]), repo, silentLogger());
  const before = repo.revision;
  gated.onEvent('CiliumNetworkPolicy', { kind: 'upsert', key: 'default/new', object: obj('CiliumNetworkPolicy', 'new', '10.3.0.0/16') });
  gated.onEvent('CiliumNetworkPolicy', { kind: 'delete', key: 'default/gone', object: obj('CiliumNetworkPolicy', 'gone', '10.2.0.0/16') });
  gated.onEvent('CiliumNetworkPolicy', { kind: 'sync' });
  t.equal(repo.revision, before, 'before the flush the repository is untouched');
  let replayed = false;
  void gated.replayed.then(() => (replayed = true));
  await Promise.resolve();
  t.notOk(replayed, 'not replayed while a kind has not reached its sync');
  gated.onEvent('CiliumClusterwideNetworkPolicy', { kind: 'sync' });
  await gated.replayed;

  const seen: string[] = [];
  const sub = repo.changes$.subscribe(() => seen.push(repo.get().map((r) => r.labels?.find((l) => l.includes('policy.name='))).sort().join(',')));
  t.teardown(() => sub.unsubscribe());
  t.same(gated.flush(), { applied: 1, deleted: 1 });
  t.same(repo.get(named('CiliumNetworkPolicy', 'new')).length, 1, 'the new one applied');
  t.same(repo.get(named('CiliumNetworkPolicy', 'old')).length, 0, 'the one deleted while down pruned');
  t.same(repo.get(named('CiliumNetworkPolicy', 'gone')).length, 0, 'the deleted one removed');
  t.same(seen, ['k8s:io.cilium.k8s.policy.name=new'], 'one change from the restored policy to the apiserver\'s: no endpoint sees part of it');
  t.equal(repo.revision, before + 1, 'one revision');

  const rev = repo.revision;
  gated.onEvent('CiliumClusterwideNetworkPolicy', { kind: 'upsert', key: 'cw', object: { ...obj('CiliumClusterwideNetworkPolicy', 'cw', '10.4.0.0/16'), metadata: { name: 'cw', uid: 'cw' } } });
  t.equal(repo.revision, rev + 1, 'after the flush an event applies at once');
});

t.test('the cache-sync gate opens once every resource synced and every holder released', async (t) => {
  const scripted = (): { lw: ListWatcher<K8sObject>; list: () => void } => {
    let answer!: () => void;
    const listed = new Promise<void>((r) => (answer = r));
    return {
      lw: {
        list: async () => {
          await listed;
          return { items: [], resourceVersion: '1' };
        },
        watch: async () => {
          let end!: () => void;
          return { done: new Promise<void>((r) => (end = r)), stop: () => end() };
        },
      },
      list: answer,
    };
  };
  const a = scripted();
  const b = scripted();
  const ra = new Resource<K8sObject>('a', a.lw);
  const rb = new Resource<K8sObject>('b', b.lw);
  const gate = new CacheSyncGate([{ name: 'a', resource: ra }, { name: 'b', resource: rb }, { name: 'off', resource: undefined }], new HealthRegistry().scopeAt(['gate']));
  const release = gate.hold('policy');
  ra.start();
  rb.start();
  t.teardown(async () => {
    await ra.stop();
    await rb.stop();
  });
  a.list();
  await ra.synced;
  t.same(gate.waitingFor(), ['b'], 'waiting for the resource not synced');
  t.notOk(gate.open, 'closed while one is not synced');
  b.list();
  await gate.synced;
  t.ok(gate.open, 'open once all synced');
  t.notOk(gate.ready, 'not caught up while a holder has not released');
  t.throws(() => gate.hold('late'), /registered after the caches synced/, 'a holder registering late is refused');
  release();
  await gate.caughtUp;
  t.ok(gate.ready, 'caught up');
});
