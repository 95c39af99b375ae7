// The PolicyReconciler on a real Repository (a mock identity allocator): replace per object, the
// same name recreated (new uid) replacing, delete even of an invalid object, an invalid update
// keeping the previous version and being reported with its field, nothing pruned before `sync`,
// and at `sync` only the rules of this kind whose object is gone (not API-imported rules, not
// another kind's object of the same name).
import t from 'tap';
import { silentLogger } from '../../src/hive/logger.js';
import { Repository, SelectorCache, type PolicyError } from '../../src/cells/policy/index.js';
import { PolicyReconciler, type PolicyKind, type PolicyObject } from '../../src/cells/policy-k8s/index.js';
import { MockAllocator } from '../policy/helpers.js';

function setup(kind: PolicyKind = 'CiliumNetworkPolicy') {
  const alloc = new MockAllocator();
  const cache = new SelectorCache(alloc);
  alloc.changes$.subscribe((c) => cache.onIdentity(c));
  const repo = new Repository(cache, alloc);
  const reported: { kind: PolicyKind; name?: string; pointer: string }[] = [];
  const rec = new PolicyReconciler(kind, repo, silentLogger(), async (k, obj, err: PolicyError) => {
    reported.push({ kind: k, name: obj.metadata?.name, pointer: err.pointer });
  });
  return { repo, rec, reported };
}

function cnp(name: string, cidr: string, uid = 'u1', kind: PolicyKind = 'CiliumNetworkPolicy'): PolicyObject {
  return {
    apiVersion: 'cilium.io/v2', kind, metadata: { name, ...(kind === 'CiliumNetworkPolicy' ? { namespace: 'default' } : {}), uid },
    spec: { endpointSelector: { matchLabels: { app: 'db' } }, ingress: [{ fromCIDR: [cidr] }] },
  } as PolicyObject;
}
const up = (key: string, object: PolicyObject) => ({ kind: 'upsert' as const, key, object });
const none = () => false;
const CNP_DB = ['k8s:io.cilium.k8s.policy.derived-from=CiliumNetworkPolicy', 'k8s:io.cilium.k8s.policy.name=db'];

t.test('update replaces; recreated with a new uid replaces; delete removes', async (t) => {
  const { repo, rec } = setup();
  await rec.handle(up('default/db', cnp('db', '10.1.0.0/16')), none);
  await rec.handle(up('default/db', cnp('db', '10.2.0.0/16')), none);
  t.equal(repo.get(CNP_DB).length, 1, 'one version');
  const rev = repo.revision;
  await rec.handle(up('default/db', cnp('db', '10.2.0.0/16')), none);
  t.equal(repo.revision, rev, 'the same version again (the replay at start) makes no new revision');
  await rec.handle(up('default/db', cnp('db', '10.3.0.0/16', 'u2')), none);
  t.equal(repo.get(CNP_DB).length, 1, 'the recreated object replaced the old uid\'s rules');
  t.match(JSON.stringify(repo.get(CNP_DB)), /10\.3\.0\.0/);
  await rec.handle({ kind: 'delete', key: 'default/db', object: cnp('db', 'not a cidr', 'u2') }, none);
  t.equal(repo.get(CNP_DB).length, 0, 'a delete removes the rules even when the deleted spec does not translate');
});

t.test('an invalid update keeps the previous version and is reported with its field', async (t) => {
  const { repo, rec, reported } = setup();
  await rec.handle(up('default/db', cnp('db', '10.1.0.0/16')), none);
  await rec.handle(up('default/db', cnp('db', '10.1.0.0/99')), none);
  t.match(JSON.stringify(repo.get(CNP_DB)), /10\.1\.0\.0\/16/, 'the previous version stays');
  t.same(reported, [{ kind: 'CiliumNetworkPolicy', name: 'db', pointer: '/spec/ingress/0/fromCIDR/0' }]);
  t.ok(rec.invalid.has('default/db'), 'known invalid');
  await rec.handle(up('default/db', cnp('db', '10.4.0.0/16')), none);
  t.notOk(rec.invalid.has('default/db'), 'valid again once fixed');
  const fresh = setup();
  await fresh.rec.handle(up('default/x', cnp('x', 'bad')), none);
  t.equal(fresh.repo.get().length, 0, 'an invalid new object applies nothing');
});

t.test('nothing is pruned before sync; at sync only this kind\'s vanished objects', async (t) => {
  const { repo, rec } = setup();
  // as restored from the policy store: two CNPs, a CCNP of the same name, and an API-imported rule
  await rec.handle(up('default/db', cnp('db', '10.1.0.0/16')), none);
  await rec.handle(up('default/old', cnp('old', '10.9.0.0/16')), none);
  const shared = new PolicyReconciler('CiliumClusterwideNetworkPolicy', repo, silentLogger(), async () => undefined);
  await shared.handle(up('old', cnp('old', '10.8.0.0/16', 'c1', 'CiliumClusterwideNetworkPolicy')), none);
  repo.import(JSON.stringify([{ endpointSelector: {}, ingress: [{ fromEntities: ['host'] }], labels: ['unspec:mine=1'] }]));
  const before = repo.get().length;
  await rec.handle(up('default/db', cnp('db', '10.1.0.0/16')), () => true);
  t.equal(repo.get().length, before, 'no deletion before sync');
  await rec.handle({ kind: 'sync' }, (key) => key === 'default/db');
  t.equal(repo.get(['k8s:io.cilium.k8s.policy.derived-from=CiliumNetworkPolicy', 'k8s:io.cilium.k8s.policy.name=old']).length, 0, 'the vanished CNP is pruned');
  t.equal(repo.get(CNP_DB).length, 1, 'the existing CNP stays');
  t.equal(repo.get(['k8s:io.cilium.k8s.policy.derived-from=CiliumClusterwideNetworkPolicy']).length, 1, 'the CCNP of the same name stays');
  t.equal(repo.get(['unspec:mine=1']).length, 1, 'an API-imported rule stays');
});
