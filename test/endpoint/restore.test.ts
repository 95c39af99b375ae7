import t from 'tap';
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { testHive, type TestLike } from '../../src/hive/index.js';
import { statedirCell } from '../../src/cells/statedir/index.js';
import {
  endpointCell, datapathConfigOf, EndpointAPIManagerToken, EndpointManagerImplToken, EndpointRestorerToken, EndpointStateStoreToken,
  type Endpoint, type EndpointChangeRequest, type EndpointView,
} from '../../src/cells/endpoint/index.js';
import { PolicyRestoreToken } from '../../src/cells/policy/types.js';
import { RULES_MARKER } from '../../src/cells/endpoint/state-store.js';
import { mocks, request, tempStateDir, type Mocks } from './mocks.js';

const ctx = {};
const req = (n: number, extra: Record<string, unknown> = {}) => request(n, extra) as EndpointChangeRequest;

/** Starts a hive on `dir`; subscribes to restored$ before start. */
async function hive(t: TestLike, dir: string, m: Mocks = mocks()) {
  const h = await testHive(t, [statedirCell, endpointCell], { replace: m.replace, config: { 'state-dir': dir }, start: false });
  const mgr = h.get(EndpointManagerImplToken);
  const restored: EndpointView[] = [];
  mgr.restored$.subscribe((e) => restored.push(e));
  await h.hive.start();
  t.teardown(() => h.hive.stop());
  return { ...m, h, mgr, restored, api: h.get(EndpointAPIManagerToken), done: h.get(EndpointRestorerToken).done };
}

t.test('stop a hive, start a new one on the same state dir: endpoints come back', async (t) => {
  const dir = tempStateDir(t, 'restore');
  const one = await hive(t, dir);
  const eps = [];
  for (let n = 1; n <= 3; n++) eps.push(await one.api.createEndpoint(ctx, req(n, { labels: [`k8s:app=a${n}`] })));
  await one.api.patchLabels(ctx, String(eps[0]!.id), ['k8s:extra=1'], []);
  await one.api.patchConfig(ctx, String(eps[0]!.id), { Debug: 'Enabled' });
  await one.h.hive.stop();

  const m = mocks();
  m.links.gone.add('lxc3');
  const two = await hive(t, dir, m);
  const summary = await two.done;
  t.same(summary.restored.sort(), [eps[0]!.id, eps[1]!.id].sort(), 'same IDs');
  t.same(summary.dropped, [{ id: eps[2]!.id, reason: 'host interface lxc3 no longer exists' }]);
  t.same(summary.failed, []);
  t.same(new Set(two.restored), new Set(two.mgr.list()), 'EndpointRestored for each');
  t.notOk(existsSync(join(dir, String(eps[2]!.id))), "the dropped endpoint's directory is removed");
  for (const old of eps.slice(0, 2)) {
    const ep = two.mgr.lookup(String(old.id))!;
    t.equal(ep.state, 'ready', `endpoint ${old.id} regenerated`);
    t.same(ep.labels, old.labels, 'labels kept');
    t.equal(ep.ipv4, old.ipv4);
    t.equal(m.ipam.ownerOf(old.ipv4!), `default/pod-${old === eps[0] ? 1 : 2}`, 'IPv4 re-claimed');
    t.equal(m.ipam.ownerOf(old.ipv6!), `default/pod-${old === eps[0] ? 1 : 2}`, 'IPv6 re-claimed');
    t.equal(m.identities.lookup(ep.identity!)?.labels.join(','), ep.labels.join(','), 'identity re-allocated from the labels');
    t.equal(m.datapath.loader.get(ep.id)?.config.identity, ep.identity, 'program loaded again');
    t.ok(ep.log().some((l) => l.message === 'Endpoint restoring'));
  }
  const first = two.mgr.lookup(String(eps[0]!.id))!;
  t.same(first.customLabels, ['k8s:extra=1'], 'user labels kept');
  t.equal(first.options.Debug, 'Enabled', 'options kept');
  t.equal(two.mgr.lookup('container-id:container-3'), undefined);
  const again = await two.api.createEndpoint(ctx, req(9));
  t.notOk(eps.slice(0, 2).some((e) => e.id === again.id), 'new endpoints never take a restored ID');
});

t.test('a crash between writing <id>_next and the rename: the old state is restored, _next deleted', async (t) => {
  const dir = tempStateDir(t, 'crash');
  const one = await hive(t, dir);
  const ep = (await one.api.createEndpoint(ctx, req(1))) as Endpoint;
  // a regeneration with new labels writes <id>_next, then the agent dies before the rename
  ep.modifyLabels(['k8s:crashed=1'], []);
  await one.h.get(EndpointStateStoreToken).prepare(ep, datapathConfigOf(ep));
  t.ok(existsSync(join(dir, `${ep.id}_next`, 'ep_config.json')), '_next written');
  t.match(readFileSync(join(dir, `${ep.id}_next`, 'ep_config.json'), 'utf8'), /crashed/);
  await one.h.hive.stop();

  const two = await hive(t, dir);
  const summary = await two.done;
  t.same(summary.removedNext, [`${ep.id}_next`]);
  t.same(readdirSync(dir), [String(ep.id)], 'only the committed directory is left');
  const back = two.mgr.lookup(String(ep.id))!;
  t.same(back.customLabels, [], 'the state before the interrupted regeneration');
  t.equal(back.state, 'ready');
});

t.test('a crash between the two renames: <id>_stale is brought back', async (t) => {
  const dir = tempStateDir(t, 'stale');
  const one = await hive(t, dir);
  const ep = await one.api.createEndpoint(ctx, req(1));
  await one.h.hive.stop();
  renameSync(join(dir, String(ep.id)), join(dir, `${ep.id}_stale`));
  mkdirSync(join(dir, `${ep.id}_next`));
  writeFileSync(join(dir, `${ep.id}_next`, 'ep_config.json'), '{"partial":');
  const two = await hive(t, dir);
  const summary = await two.done;
  t.same(summary.restored, [ep.id]);
  t.same(readdirSync(dir), [String(ep.id)]);
});

t.test('endpoints whose IPs cannot be re-claimed are dropped, the rest come back', async (t) => {
  const dir = tempStateDir(t, 'partial');
  const one = await hive(t, dir);
  const a = await one.api.createEndpoint(ctx, req(1));
  const b = await one.api.createEndpoint(ctx, req(2));
  await one.h.hive.stop();
  const m = mocks();
  m.ipam.refuse.add(b.ipv6!);
  const two = await hive(t, dir, m);
  const summary = await two.done;
  t.same(summary.restored, [a.id]);
  t.equal(summary.dropped.length, 1);
  t.match(summary.dropped[0]!, { id: b.id, reason: /gateway address/ });
  t.equal(m.ipam.ownerOf(b.ipv4!), undefined, 'the IPv4 claimed before the IPv6 failed is given back');
  t.ok(m.ipam.released.includes(b.ipv4!));
});

t.test('an unreadable stored endpoint stops the start, naming its directory and the way out; nothing is restored', async (t) => {
  const dir = tempStateDir(t, 'unreadable');
  const one = await hive(t, dir);
  await one.api.createEndpoint(ctx, req(1));
  await one.h.hive.stop();
  mkdirSync(join(dir, '4000'));
  writeFileSync(join(dir, '4000', 'ep_config.json'), 'not json');
  const m = mocks();
  const h = await testHive(t, [statedirCell, endpointCell], { replace: m.replace, config: { 'state-dir': dir }, start: false });
  await t.rejects(h.hive.start(), new RegExp(`hook "endpoint-restore".*unreadable endpoint state: ${join(dir, '4000')} \\(.*JSON.*\\); the agent does not start without them.*fix: restore each directory from a backup, or remove it`), 'the start fails');
  t.equal(h.get(EndpointManagerImplToken).size, 0, 'no endpoint restored');
  t.ok(existsSync(join(dir, '4000')), 'the directory is left in place');
});

t.test('creations wait until restored endpoints hold their IDs', async (t) => {
  const dir = tempStateDir(t, 'wait');
  const one = await hive(t, dir);
  const ep = await one.api.createEndpoint(ctx, req(1));
  await one.h.hive.stop();
  const m = mocks();
  const h = await testHive(t, [statedirCell, endpointCell], { replace: m.replace, config: { 'state-dir': dir }, start: false });
  const api = h.get(EndpointAPIManagerToken);
  const early = api.createEndpoint(ctx, req(2, { id: ep.id }));
  const other = api.createEndpoint(ctx, req(3));
  await h.hive.start();
  t.teardown(() => h.hive.stop());
  await t.rejects(early, { code: 'exists', field: '/id' }, 'the restored endpoint kept its ID');
  t.not((await other).id, ep.id);
  t.equal(h.get(EndpointManagerImplToken).lookup(String(ep.id))?.spec.ifName, 'lxc1');
});

t.test('nothing is restored or regenerated before the stored policy is back; a failed policy restore stops the start', async (t) => {
  const dir = tempStateDir(t, 'policy-first');
  const one = await hive(t, dir);
  const ep = await one.api.createEndpoint(ctx, req(1, { labels: ['k8s:app=web'] }));
  await one.h.hive.stop();

  // the policy restore is still running: the endpoint restore waits for it
  const m = mocks();
  let finish!: () => void;
  m.policyRestore = { done: new Promise<void>((r) => (finish = r)) };
  const replace = [...m.replace.filter(([tok]) => tok !== PolicyRestoreToken), [PolicyRestoreToken, m.policyRestore] as const];
  const h = await testHive(t, [statedirCell, endpointCell], { replace, config: { 'state-dir': dir }, start: false });
  const mgr = h.get(EndpointManagerImplToken);
  let started = false;
  const starting = h.hive.start().then(() => (started = true));
  t.teardown(() => h.hive.stop());
  await new Promise((r) => setTimeout(r, 200));
  t.notOk(started, 'the start waits for the policy restore');
  t.equal(mgr.size, 0, 'no endpoint restored yet');
  t.same(m.policy.resolved, [], 'no policy resolved for any endpoint yet');
  m.policy.revision = 7; // what the policy store held
  finish();
  await starting;
  await h.get(EndpointRestorerToken).done;
  t.equal(mgr.lookup(String(ep.id))?.toModel().status.policy?.realized?.['policy-revision'], 7, 'the first regeneration used the restored policy');
  t.equal(m.policy.resolved.length, 1, 'resolved once, after the policy restore');

  // the policy store could not be used: the start fails before any endpoint exists
  const bad = mocks();
  const refused = Promise.reject(new Error('policy store /x/policies.json: is not JSON'));
  refused.catch(() => undefined);
  const replaceBad = [...bad.replace.filter(([tok]) => tok !== PolicyRestoreToken), [PolicyRestoreToken, { done: refused }] as const];
  const h2 = await testHive(t, [statedirCell, endpointCell], { replace: replaceBad, config: { 'state-dir': dir }, start: false });
  await t.rejects(h2.hive.start(), /endpoint-restore.*policies\.json: is not JSON/, 'the start fails with the policy store error');
  t.equal(h2.get(EndpointManagerImplToken).size, 0, 'no endpoint was restored');
  t.same(bad.policy.resolved, [], 'and none regenerated');
});

t.test('a missing policy store under endpoints that enforced rules stops the start; without rules before, it does not', async (t) => {
  const dir = tempStateDir(t, 'policy-lost');
  const m1 = mocks();
  m1.policy.revision = 5; // rules were imported: the endpoint realizes revision 5
  const one = await hive(t, dir, m1);
  const ep = await one.api.createEndpoint(ctx, req(1, { labels: ['k8s:app=web'] }));
  const plain = await one.api.createEndpoint(ctx, req(2));
  await one.h.hive.stop();

  const start = (found: boolean) => {
    const m = mocks();
    m.policy.revision = 1;
    m.policyRestore = { done: Promise.resolve({ file: '/state/policies.json', found }) };
    const replace = [...m.replace.filter(([tok]) => tok !== PolicyRestoreToken), [PolicyRestoreToken, m.policyRestore] as const];
    return testHive(t, [statedirCell, endpointCell], { replace, config: { 'state-dir': dir }, start: false });
  };
  const h = await start(false);
  await t.rejects(h.hive.start(), new RegExp(`hook "endpoint-restore".*the policy store /state/policies\\.json is missing, but stored endpoints (${ep.id}, ${plain.id}|${plain.id}, ${ep.id}) enforced policy revision 5 from it; .*fix: restore /state/policies\\.json from a backup; or, .*create it empty: printf '\\{"version":1,"revision":5,"rules":\\[\\],"cidrIdentities":\\{\\}\\}\\\\n' > /state/policies\\.json`), 'the start fails naming the file, the endpoints and the way out');
  t.equal(h.get(EndpointManagerImplToken).size, 0, 'no endpoint was restored');
  t.ok(existsSync(join(dir, String(ep.id), 'ep_config.json')), 'the endpoint state is left in place');

  const h2 = await start(true);
  await h2.hive.start();
  t.teardown(() => h2.hive.stop());
  t.equal(h2.get(EndpointManagerImplToken).size, 2, 'with the store found, both endpoints are restored');
  await h2.hive.stop();

  // endpoints that never saw a rule (revision 1): no store is what they had
  const fresh = tempStateDir(t, 'policy-never');
  const two = await hive(t, fresh);
  await two.api.createEndpoint(ctx, req(3));
  await two.h.hive.stop();
  const m = mocks();
  m.policyRestore = { done: Promise.resolve({ file: '/state/policies.json', found: false }) };
  const replace = [...m.replace.filter(([tok]) => tok !== PolicyRestoreToken), [PolicyRestoreToken, m.policyRestore] as const];
  const h3 = await testHive(t, [statedirCell, endpointCell], { replace, config: { 'state-dir': fresh }, start: false });
  await h3.hive.start();
  t.teardown(() => h3.hive.stop());
  t.equal(h3.get(EndpointManagerImplToken).size, 1, 'the endpoint is restored with no store');
});

t.test('the node marker: rules realized by a policy-only regeneration stop a start without the store; none stored, the marker goes', async (t) => {
  const dir = tempStateDir(t, 'policy-marker');
  const start = async (found: boolean) => {
    const m = mocks();
    m.policyRestore = { done: Promise.resolve({ file: '/state/policies.json', found }) };
    const replace = [...m.replace.filter(([tok]) => tok !== PolicyRestoreToken), [PolicyRestoreToken, m.policyRestore] as const];
    return { m, h: await testHive(t, [statedirCell, endpointCell], { replace, config: { 'state-dir': dir }, start: false }) };
  };
  const one = await hive(t, dir);
  const ep = (await one.api.createEndpoint(ctx, req(1, { labels: ['k8s:app=web'] }))) as Endpoint;
  one.policy.revision = 3; // rules imported after the endpoint: its directory still says revision 1
  await ep.regenerate('policy change', 'no-rebuild');
  t.equal((JSON.parse(readFileSync(join(dir, String(ep.id), 'ep_config.json'), 'utf8')) as { policyRevision?: number }).policyRevision, 1, 'the directory was not rewritten');
  await one.h.hive.stop();

  const lost = await start(false);
  await t.rejects(lost.h.hive.start(), new RegExp(`the policy store /state/policies\\.json is missing, but stored endpoints ${ep.id} enforced policy revision 3 from it`), 'the marker stops the start like a stored revision above 1');
  t.equal(lost.h.get(EndpointManagerImplToken).size, 0, 'no endpoint was restored');

  // the endpoint went (its interface is gone): a start without the store has nothing to protect and drops the marker
  const found = await start(true);
  await found.h.hive.start();
  await found.h.get(EndpointManagerImplToken).removeEndpoint(found.h.get(EndpointManagerImplToken).list()[0]!, 'test');
  await found.h.hive.stop();
  const empty = await start(false);
  await empty.h.hive.start();
  t.notOk(existsSync(join(dir, RULES_MARKER)), 'no store and no endpoint: the marker is removed');
  const fresh = await empty.h.get(EndpointAPIManagerToken).createEndpoint(ctx, req(2));
  t.equal(fresh.realizedPolicyRevision, 1, 'an endpoint with no rules');
  await empty.h.hive.stop();
  const again = await start(false);
  await again.h.hive.start();
  t.teardown(() => again.h.hive.stop());
  t.equal(again.h.get(EndpointManagerImplToken).size, 1, 'no rules since: restored without the store');
});

t.test('a stored endpoint whose fields have the wrong types stops the start naming the directory and the field', async (t) => {
  const dir = tempStateDir(t, 'shape');
  const one = await hive(t, dir);
  const ep = await one.api.createEndpoint(ctx, req(1, { labels: ['k8s:app=web'] }));
  await one.h.hive.stop();
  const file = join(dir, String(ep.id), 'ep_config.json');
  const good = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  const cases: Array<[string, (v: Record<string, unknown>) => void, string]> = [
    ['labels a string', (v) => (v.labels = 'k8s:app=web'), '/labels: expected'],
    ['user labels not strings', (v) => (v.labels = { orchestration: [], user: [1] }), '/labels/user: expected an array of strings'],
    ['orchestration labels missing', (v) => (v.labels = { user: [] }), '/labels/orchestration: expected an array of strings'],
    ['identity a string', (v) => (v.identity = '256'), '/identity: expected an integer >= 1'],
    ['policy revision negative', (v) => (v.policyRevision = -1), '/policyRevision: expected an integer >= 1'],
    ['spec.ipv4 a number', (v) => (v.spec = { ...(v.spec as object), ipv4: 167772161 }), '/spec/ipv4: expected a string'],
    ['spec.ifIndex a string', (v) => (v.spec = { ...(v.spec as object), ifIndex: '7' }), '/spec/ifIndex: expected an integer'],
    ['options not strings', (v) => (v.options = { Conntrack: false }), '/options: expected an object of strings'],
    ['an array', (v) => Object.keys(v).forEach((k) => delete v[k]), '/version'],
  ];
  for (const [name, mutate, field] of cases) {
    const v = structuredClone(good);
    mutate(v);
    writeFileSync(file, JSON.stringify(v));
    const h = await testHive(t, [statedirCell, endpointCell], { replace: mocks().replace, config: { 'state-dir': dir }, start: false });
    await t.rejects(h.hive.start(), { message: new RegExp(`unreadable endpoint state: ${join(dir, String(ep.id))} \\(ep_config\\.json of endpoint ${ep.id} is not a cellium endpoint: ${field.replace(/[[\]/]/g, '\\$&')}.*fix: restore each directory`) }, name);
    t.equal(h.get(EndpointManagerImplToken).size, 0, `${name}: nothing restored`);
  }
  writeFileSync(file, JSON.stringify(good));
  const back = await hive(t, dir);
  t.equal(back.mgr.size, 1, 'the intact file restores');
});
