// The policy store (<state-dir>/policies.json): rules, revision and CIDR identity numbers survive a
// restart of the real statedir + identity + policy cells; a store that cannot be used stops the
// start naming the file and the way out; no store is an empty repository; a write that fails or
// is interrupted leaves the previous store readable and changes nothing in memory.
import t from 'tap';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { testHive, type TestLike } from '../../src/hive/index.js';
import { statedirCell } from '../../src/cells/statedir/index.js';
import { identityCell, IdentityAllocatorToken } from '../../src/cells/identity/index.js';
import {
  policyCell, PolicyRepositoryToken, PolicyStore, PolicyStoreError, policyStoreFile, POLICY_STORE_FILE, type PolicyChange, type Repository,
} from '../../src/cells/policy/index.js';
import { parseLabels } from '../../src/lib/labels.js';
import { rules, tempStateDir } from './helpers.js';

/** The real statedir, identity and policy cells on `dir`. */
async function agent(t: TestLike, dir: string) {
  const h = await testHive(t, [statedirCell, identityCell, policyCell], { config: { 'state-dir': dir } });
  return { h, repo: h.get(PolicyRepositoryToken) as Repository, alloc: h.get(IdentityAllocatorToken) };
}

/** The start of the same cells on `dir`, expected to fail. */
function startFails(t: TestLike, dir: string): Promise<unknown> {
  return testHive(t, [statedirCell, identityCell, policyCell], { config: { 'state-dir': dir } });
}

const cnp = (name: string, spec: object, namespace = 'prod') =>
  JSON.stringify({ apiVersion: 'cilium.io/v2', kind: 'CiliumNetworkPolicy', metadata: { name, namespace }, ...spec });

t.test('round trip: rules, revision, CIDR identity numbers and the resolved map state come back', async (t) => {
  const dir = tempStateDir(t);
  const one = await agent(t, dir);
  const web = (await one.alloc.allocate(parseLabels(['k8s:app=web', 'k8s:io.kubernetes.pod.namespace=prod']))).identity;
  await one.alloc.allocate(parseLabels(['k8s:app=client', 'k8s:io.kubernetes.pod.namespace=prod']));
  one.repo.import(cnp('a', { spec: { endpointSelector: { matchLabels: { app: 'web' } }, egressDeny: [{ toCIDR: ['192.0.2.0/24'] }] } }));
  one.repo.import(cnp('b', { specs: [
    { endpointSelector: { matchLabels: { app: 'web' } }, ingress: [{ fromEndpoints: [{ matchLabels: { app: 'client' } }], toPorts: [{ ports: [{ port: '80', protocol: 'TCP' }] }] }] },
    { endpointSelector: { matchLabels: { app: 'web' } }, egress: [{ toCIDR: ['198.51.100.0/24'] }], ingressDeny: [{ fromEntities: ['world'] }] },
  ] }));
  one.repo.import(rules({ endpointSelector: {}, labels: ['k8s:team=ops'], description: 'bare', ingress: [{ fromEntities: ['cluster'] }] }));
  one.repo.delete(['k8s:io.cilium.k8s.policy.name=a']); // frees the first CIDR number
  one.repo.import(JSON.stringify({ apiVersion: 'cilium.io/v2', kind: 'CiliumClusterwideNetworkPolicy', metadata: { name: 'c' }, spec: { endpointSelector: {}, egressDeny: [{ toCIDR: ['203.0.113.0/24'], toPorts: [{ ports: [{ port: '53', protocol: 'UDP' }] }] }] } }));
  await one.repo.settled();
  const before = one.repo.snapshot();
  t.equal(before.rules.length, 4);
  t.same(Object.keys(before.cidrIdentities).sort(), ['198.51.100.0/24', '203.0.113.0/24']);
  t.notOk(Object.values(before.cidrIdentities).includes((1 << 24) + 1), 'the first CIDR number was freed with rule a: a fresh allocation in rule order would now differ');
  const resolvedBefore = one.repo.resolve(web);
  const getBefore = JSON.stringify(one.repo.get());
  await one.h.hive.stop();

  const two = await agent(t, dir);
  t.equal(JSON.stringify(two.repo.get()), getBefore, 'the same rules, byte for byte, in the same order');
  t.equal(two.repo.revision, before.revision, 'the same revision');
  t.same(two.repo.snapshot().cidrIdentities, before.cidrIdentities, 'every CIDR identity has the number it had');
  const web2 = two.alloc.lookupByLabels(web.labelSet)!;
  t.equal(web2.id, web.id);
  t.same(two.repo.resolve(web2), resolvedBefore, 'the same map state for the endpoint identity');
  const change = two.repo.import(cnp('d', { spec: { endpointSelector: { matchLabels: { app: 'db' } }, ingress: [{}] } }));
  t.equal(change.revision, before.revision + 1, 'the revision goes on from the stored one');
});

t.test('no store: an empty repository at revision 1, and no file until the first change', async (t) => {
  const dir = tempStateDir(t);
  const { repo } = await agent(t, dir);
  t.same(repo.get(), []);
  t.equal(repo.revision, 1);
  t.same(readdirSync(dir).filter((f) => f.startsWith(POLICY_STORE_FILE)), []);
  repo.import(rules({ endpointSelector: {}, ingress: [{}] }));
  const stored = JSON.parse(readFileSync(policyStoreFile(dir), 'utf8')) as { version: number; revision: number; rules: unknown[] };
  t.match(stored, { version: 1, revision: 2, rules: [{ endpointSelector: {} }] }, 'written by the import itself, with its revision');
});

t.test('a store that cannot be used stops the start, naming the file and the way out', async (t) => {
  const good = JSON.stringify({ version: 1, revision: 3, rules: [{ endpointSelector: {}, ingress: [{}] }], cidrIdentities: {} });
  const cases: [string, (file: string) => void, RegExp][] = [
    ['not JSON', (f) => writeFileSync(f, '{"version":1,"revis'), /is not JSON/],
    ['empty', (f) => writeFileSync(f, ''), /is not JSON/],
    ['another version', (f) => writeFileSync(f, good.replace('"version":1', '"version":7')), /version 7 is not supported/],
    ['a bad revision', (f) => writeFileSync(f, good.replace('"revision":3', '"revision":0')), /\/revision must be an integer >= 1/],
    ['rules not an array', (f) => writeFileSync(f, good.replace(/"rules":\[.*\],"cidr/, '"rules":{},"cidr')), /\/rules must be an array/],
    ['an invalid rule', (f) => writeFileSync(f, good.replace('"ingress":[{}]', '"ingress":[{"toPorts":[{"ports":[{"port":"80","protocol":"tcp"}]}]}]')), /the rule at \/rules\/0\/ingress\/0\/toPorts\/0\/ports\/0\/protocol cannot be restored/],
    ['a number given twice', (f) => writeFileSync(f, good.replace('"cidrIdentities":{}', '"cidrIdentities":{"10.0.0.0/8":16777217,"10.1.0.0/16":16777217}')), /gives identity 16777217 to both/],
    ['a directory', (f) => mkdirSync(f), /cannot be read \(EISDIR/],
  ];
  for (const [name, make, problem] of cases) {
    const dir = tempStateDir(t);
    const file = policyStoreFile(dir);
    make(file);
    const err = await startFails(t, dir).then(() => undefined, (e: unknown) => e as Error);
    t.ok(err, `${name}: the start fails`);
    t.match(err?.message ?? '', problem, `${name}: says what is wrong`);
    t.ok(err?.message.includes(`policy store ${file}`), `${name}: names the file`);
    t.match(err?.message ?? '', /does not start with an empty policy repository/, `${name}: says why it stops`);
    t.match(err?.message ?? '', new RegExp(`restore .* from a backup, or move it aside \\(mv ${file} ${file}\\.bad\\)`), `${name}: gives the way out`);
    t.match(err?.message ?? '', /module "policy" .*hook "policy-restore"/, `${name}: names the module and hook`);
  }
});

t.test('a write interrupted by a crash: the leftover temporary file is ignored and removed, the previous store is used', async (t) => {
  const dir = tempStateDir(t);
  const one = await agent(t, dir);
  one.repo.import(rules({ endpointSelector: { matchLabels: { app: 'web' } }, ingressDeny: [{ fromEntities: ['world'] }], labels: ['k8s:keep=1'] }));
  const rev = one.repo.revision;
  await one.h.hive.stop();
  const partial = `${policyStoreFile(dir)}.tmp-4242-1`;
  writeFileSync(partial, '{"version":1,"revision":99,"rules":[{"endpointSel');

  const two = await agent(t, dir);
  t.same(two.repo.get().map((r) => r.labels), [['k8s:keep=1']], 'the rules of the previous store');
  t.equal(two.repo.revision, rev);
  t.same(readdirSync(dir).filter((f) => f.includes('.tmp-')), [], 'the partial write is gone');
});

t.test('a write that fails changes nothing: the previous store stays readable, memory and subscribers see nothing', async (t) => {
  let fail: 'write' | 'rename' | undefined;
  const atomic = await import('../../src/lib/atomic-file.js');
  // the store writes through src/lib/coalesced-file.ts, which writes through atomic-file.ts
  const coalesced = await t.mockImport<typeof import('../../src/lib/coalesced-file.js')>('../../src/lib/coalesced-file.js', {
    '../../src/lib/atomic-file.js': {
      ...atomic,
      writeFileAtomicSync: (file: string, data: string) => {
        if (fail === 'write') {
          // the crash came half-way through the temporary file
          writeFileSync(`${file}.tmp-${process.pid}-999`, data.slice(0, data.length / 2));
          throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
        }
        if (fail === 'rename') throw Object.assign(new Error('EIO: i/o error, rename'), { code: 'EIO' });
        atomic.writeFileAtomicSync(file, data);
      },
    },
  });
  const { PolicyStore: FailingStore } = await t.mockImport<typeof import('../../src/cells/policy/store.js')>('../../src/cells/policy/store.js', {
    '../../src/lib/coalesced-file.js': coalesced,
  });
  const dir = tempStateDir(t);
  const { MockAllocator } = await import('./helpers.js');
  const alloc = new MockAllocator();
  const { Repository: Repo, SelectorCache } = await import('../../src/cells/policy/index.js');
  const store = new FailingStore(policyStoreFile(dir));
  const cache = new SelectorCache(alloc);
  alloc.changes$.subscribe((c) => cache.onIdentity(c));
  const repo = new Repo(cache, alloc, undefined, store);
  const web = alloc.id('k8s:app=web');
  repo.import(rules({ endpointSelector: { matchLabels: { app: 'web' } }, ingressDeny: [{ fromEntities: ['world'] }], labels: ['k8s:rule=deny'] }));
  const seen: PolicyChange[] = [];
  repo.changes$.subscribe((c) => seen.push(c));
  const before = { rules: JSON.stringify(repo.get()), revision: repo.revision, resolved: repo.resolve(web) };
  const onDisk = readFileSync(store.file, 'utf8');

  for (const mode of ['write', 'rename'] as const) {
    fail = mode;
    // by name: the mocked store's graph has its own instance of the errors module (mockImport)
    t.throws(() => repo.import(rules({ endpointSelector: {}, ingress: [{ fromEntities: ['all'] }], labels: ['k8s:rule=open'] })), { name: 'PolicyStoreError' }, `${mode} fails: the import throws`);
    t.throws(() => repo.delete(['k8s:rule=deny']), /policy store .*policies\.json: cannot write the policy store .*the change was not applied; fix: make .* writable/, `${mode} fails: the delete throws, naming the file and the fix`);
    t.throws(() => repo.import(rules({ endpointSelector: {}, ingress: [{}] }), { replaceWithLabels: ['k8s:rule=deny'] }), { name: 'PolicyStoreError' }, `${mode} fails: a replace throws`);
    t.equal(JSON.stringify(repo.get()), before.rules, `${mode} fails: the same rules in memory`);
    t.equal(repo.revision, before.revision, `${mode} fails: the same revision`);
    t.same(repo.resolve(web), before.resolved, `${mode} fails: the deny is still resolved`);
    t.same(seen, [], `${mode} fails: no change was emitted`);
    t.equal(readFileSync(store.file, 'utf8'), onDisk, `${mode} fails: the previous store is intact`);
    const reread = await new PolicyStore(store.file).load();
    t.same(reread?.rules.map((r) => r.labels), [['k8s:rule=deny']], `${mode} fails: and readable`);
  }
  fail = undefined;
  const ok = repo.delete(['k8s:rule=deny']);
  t.equal(ok.revision, before.revision + 1, 'once the store is writable again, the next change goes through');
  t.same(seen.map((c) => c.revision), [before.revision + 1]);
});

t.test('replace-with-labels is one change: one revision, one write', async (t) => {
  const dir = tempStateDir(t);
  const { repo } = await agent(t, dir);
  repo.import(rules({ endpointSelector: {}, ingress: [{ fromEntities: ['world'] }], labels: ['k8s:set=one', 'k8s:n=1'] }, { endpointSelector: {}, ingress: [{}], labels: ['k8s:set=one', 'k8s:n=2'] }));
  const rev = repo.revision;
  t.throws(() => repo.import('not: [valid', { replaceWithLabels: ['k8s:set=one'] }), /invalid policy/, 'an invalid import with replace-with-labels');
  t.equal(repo.get().length, 2, 'keeps the old rules');
  const change = repo.import(rules({ endpointSelector: {}, ingress: [{}], labels: ['k8s:set=two'] }), { replaceWithLabels: ['k8s:set=one'] });
  t.match(change, { revision: rev + 1, added: 1, deleted: 2 });
  t.same(repo.get().map((r) => r.labels), [['k8s:set=two']]);
  const stored = await new PolicyStore(policyStoreFile(dir)).load();
  t.same({ revision: stored?.revision, labels: stored?.rules.map((r) => r.labels) }, { revision: rev + 1, labels: [['k8s:set=two']] });
});

t.test('revision bumps without a rule change (an identity appearing under a selector) reach the store in the background', async (t) => {
  const dir = tempStateDir(t);
  const one = await agent(t, dir);
  one.repo.import(rules({ endpointSelector: { matchLabels: { app: 'web' } }, ingress: [{ fromEndpoints: [{ matchLabels: { app: 'client' } }] }] }));
  await one.alloc.allocate(parseLabels(['k8s:app=web']));
  await one.alloc.allocate(parseLabels(['k8s:app=client']));
  const rev = one.repo.revision;
  t.ok(rev > 2, `identities under the rule's selectors moved the revision (${rev})`);
  await one.h.hive.stop(); // waits for the background write
  const two = await agent(t, dir);
  t.equal(two.repo.revision, rev, 'the same revision after the restart');
});

t.test('PolicyStore alone: a failing background write is logged and retried with the next change', async (t) => {
  const dir = tempStateDir(t);
  const file = join(dir, 'sub', POLICY_STORE_FILE);
  writeFileSync(join(dir, 'sub'), 'a file where the directory should be');
  const errors: string[] = [];
  const log = { error: (o: { err: string }) => errors.push(o.err), info: () => undefined } as unknown as ConstructorParameters<typeof PolicyStore>[1];
  const store = new PolicyStore(file, log);
  store.saveLater(() => ({ revision: 2, rules: [], cidrIdentities: {} }));
  await store.flush();
  t.equal(errors.length, 1, 'logged');
  t.match(store.lastError, /EEXIST|ENOTDIR/);
  t.throws(() => store.save({ revision: 3, rules: [], cidrIdentities: {} }), PolicyStoreError, 'a synchronous save throws');
});
