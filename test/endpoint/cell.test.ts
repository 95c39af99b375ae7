import t from 'tap';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ControllerManagerToken, testHive, type TestLike } from '../../src/hive/index.js';
import { statedirCell } from '../../src/cells/statedir/index.js';
import {
  endpointCell, gcRound, EndpointAPIManagerToken, EndpointManagerImplToken, EndpointManagerToken, EndpointError,
  type EndpointChangeRequest, type EndpointView,
} from '../../src/cells/endpoint/index.js';
import { createCiliumValidator, ciliumReferenceAvailable } from '../../src/api/cilium-conformance.js';
import { mocks, request, tempStateDir } from './mocks.js';

async function start(t: TestLike, name: string, extra: Record<string, unknown> = {}) {
  const m = mocks();
  const dir = tempStateDir(t, name);
  const h = await testHive(t, [statedirCell, endpointCell], { replace: m.replace, config: { 'state-dir': dir, ...extra } });
  return { ...m, dir, h, api: h.get(EndpointAPIManagerToken), mgr: h.get(EndpointManagerImplToken) };
}
const ctx = {};
const req = (n: number, extra: Record<string, unknown> = {}) => request(n, extra) as EndpointChangeRequest;

t.test('createEndpoint (sync build): identity, policy, maps, program, state dir, model', async (t) => {
  const s = await start(t, 'create');
  const created: EndpointView[] = [];
  s.h.get(EndpointManagerToken).created$.subscribe((e) => created.push(e));
  const ep = await s.api.createEndpoint(ctx, req(1, { labels: ['k8s:app=web', 'k8s:tier=front'] }));
  t.equal(ep.state, 'ready');
  t.ok(ep.id >= 1 && ep.id <= 4095);
  t.same(created, [ep], 'EndpointCreated emitted');
  t.same(ep.labels, ['k8s:app=web', 'k8s:io.kubernetes.pod.namespace=default', 'k8s:tier=front'], 'namespace label merged');
  t.equal(ep.identity, 256);
  t.equal(s.identities.refs(256), 1);
  t.same(s.policy.resolved, [256]);
  t.equal(s.datapath.maps.lookupEndpoint('10.200.0.1')?.endpointId, ep.id, 'lxc entry');
  t.equal(s.datapath.maps.lookupIPCache('10.200.0.1')?.identity, 256, 'ipcache entry');
  t.equal(s.datapath.maps.lookupIPCache('fd00::1')?.identity, 256);
  t.equal(s.datapath.maps.policyOf(ep.id)?.length, 1, 'policy map written');
  t.equal(s.datapath.loader.get(ep.id)?.config.identity, 256, 'program loaded with the identity');
  const dir = join(s.dir, String(ep.id));
  t.ok(existsSync(join(dir, 'ep_config.json')) && existsSync(join(dir, 'ep_config.h')), 'state directory written');
  t.notOk(existsSync(`${dir}_next`), 'no _next left');
  t.match(readFileSync(join(dir, 'ep_config.h'), 'utf8'), new RegExp(`#define LXC_ID ${ep.id}\\n[^]*#define SECLABEL 256`));
  const stored = JSON.parse(readFileSync(join(dir, 'ep_config.json'), 'utf8')) as { id: number; datapathHash?: string; policyRevision?: number };
  t.equal(stored.id, ep.id);
  t.match(stored.datapathHash, /^[0-9a-f]{16}$/, 'the first build records the hash it loaded (restore trusts it instead of reloading)');
  t.equal(stored.policyRevision, model0Revision(ep), 'and the policy revision it realized');

  const model = ep.toModel();
  t.equal(model.id, ep.id);
  t.equal(model.status.state, 'ready');
  t.same(model.status.identity, { id: 256, labels: ep.labels });
  t.same(model.status.networking.addressing, [{ ipv4: '10.200.0.1', ipv6: 'fd00::1' }]);
  t.equal(model.status.networking['interface-name'], 'lxc1');
  t.equal(model.status.networking.mac, '02:00:00:00:00:01');
  t.equal(model.status.networking['host-mac'], '02:00:00:00:00:02');
  t.same(model.status.policy?.realized?.['allowed-ingress-identities'], [0]);
  t.equal(model.status.policy?.realized?.['policy-revision'], 1);
  t.same(model.status.policy?.spec, model.status.policy?.realized);
  t.equal(model.status['external-identifiers']?.['cni-attachment-id'], 'container-1:eth0');
  t.equal(model.status['external-identifiers']?.['pod-name'], 'default/pod-1');
  t.same(model.status.health, { bpf: 'OK', policy: 'OK', connected: true, overallHealth: 'OK' });
  t.ok(Array.isArray(model.status.controllers));
  // every controller named for this endpoint is listed (a cell's, like the CiliumEndpoint sync), no other's
  const controllers = s.h.get(ControllerManagerToken);
  controllers.updateController(`endpoint-${ep.id}-sync-to-k8s-ciliumendpoint`, { doFunc: () => undefined, runIntervalMs: 60_000 });
  controllers.updateController(`endpoint-${ep.id + 1}-sync-to-k8s-ciliumendpoint`, { doFunc: () => undefined, runIntervalMs: 60_000 });
  t.same(ep.toModel().status.controllers?.map((c) => (c as { name: string }).name), [`endpoint-${ep.id}-sync-to-k8s-ciliumendpoint`], 'its controllers, not another endpoint\'s');
  const msgs = model.status.log!.map((l) => l.message);
  const order = ['Endpoint creation', 'Set identity for this endpoint', 'Triggering endpoint regeneration due to Initial build on endpoint creation', 'Regenerating endpoint: Initial build on endpoint creation'];
  t.same(order.map((m) => msgs.indexOf(m)).map((i) => i >= 0), [true, true, true, true], 'every transition logged');
  t.same([...order.map((m) => msgs.indexOf(m))].sort((x, y) => x - y), order.map((m) => msgs.indexOf(m)), 'in order');
  t.ok(model.status.log?.some((l) => /Successfully regenerated endpoint program \(rewrite\+load\)/.test(l.message)));
  if (ciliumReferenceAvailable()) {
    t.same(createCiliumValidator().definition('Endpoint', JSON.parse(JSON.stringify(model))), [], "toModel() conforms to Cilium's Endpoint");
  }
});

t.test('a request without MACs gives a model without mac / host-mac (never an empty string)', async (t) => {
  const s = await start(t, 'no-mac');
  const ep = await s.api.createEndpoint(ctx, req(2, { mac: undefined, 'host-mac': undefined }));
  const net = ep.toModel().status.networking;
  t.notOk('mac' in net, 'no mac key');
  t.notOk('host-mac' in net, 'no host-mac key');
  t.equal(net['interface-name'], 'lxc2', 'the rest of the networking model is there');
});

t.test('invalid change requests are refused naming the field', async (t) => {
  const s = await start(t, 'invalid');
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ 'interface-name': undefined }, '/interface-name'],
    [{ 'interface-name': 'a/b' }, '/interface-name'],
    [{ addressing: { ipv4: '10.300.0.1' } }, '/addressing/ipv4'],
    [{ addressing: { ipv4: 'fd00::1' } }, '/addressing/ipv4'],
    [{ addressing: { ipv6: '10.0.0.1' } }, '/addressing/ipv6'],
    [{ addressing: {} }, '/addressing'],
    [{ mac: 'zz:00:00:00:00:00' }, '/mac'],
    [{ 'interface-index': -1 }, '/interface-index'],
    [{ labels: ['ok=1', '=bad'] }, '/labels/1'],
    [{ labels: 'k8s:a=b' }, '/labels'],
    [{ state: 'ready' }, '/state'],
    [{ id: 5000 }, '/id'],
    [{ 'k8s-namespace': undefined }, '/k8s-namespace'],
  ];
  for (const [extra, field] of cases) {
    const r = req(1, extra);
    for (const k of Object.keys(extra)) if (extra[k] === undefined) delete (r as Record<string, unknown>)[k];
    await t.rejects(s.api.createEndpoint(ctx, r), { name: 'EndpointError', code: 'invalid', field }, `${JSON.stringify(extra)} -> ${field}`);
  }
  await t.rejects(s.api.createEndpoint(ctx, null as unknown as EndpointChangeRequest), { code: 'invalid', field: '/' });
  t.equal(s.mgr.size, 0, 'nothing was added');
});

t.test('duplicates are refused with 409 naming what clashed', async (t) => {
  const s = await start(t, 'dup');
  const first = await s.api.createEndpoint(ctx, req(1, { id: 42 }));
  t.equal(first.id, 42, 'a requested free ID is kept');
  await t.rejects(s.api.createEndpoint(ctx, req(2, { id: 42 })), { code: 'exists', field: '/id' });
  await t.rejects(s.api.createEndpoint(ctx, req(3, { 'container-id': 'container-1' })), { code: 'exists', field: '/container-id' });
  await t.rejects(s.api.createEndpoint(ctx, req(4, { addressing: { ipv4: '10.200.0.1' } })), { code: 'exists', field: '/addressing/ipv4', message: /10\.200\.0\.1.*endpoint 42/ });
  await t.rejects(s.api.createEndpoint(ctx, req(5, { addressing: { ipv6: 'FD00:0::1' } })), { code: 'exists', field: '/addressing/ipv6' });
  t.equal(s.mgr.size, 1);
});

t.test('1000 endpoints created concurrently: no duplicate ID or IP', async (t) => {
  const s = await start(t, 'thousand');
  const reqs = Array.from({ length: 1000 }, (_, i) => req(i + 1, { 'sync-build-endpoint': i % 2 === 0 }));
  const clashes = Array.from({ length: 50 }, (_, i) => req(5000 + i, { addressing: { ipv4: `10.200.0.${i + 1}` } }));
  const results = await Promise.allSettled([...reqs, ...clashes].map((r) => s.api.createEndpoint(ctx, r)));
  const ok = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  const failed = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as EndpointError] : []));
  t.equal(ok.length, 1000, 'every distinct request succeeded');
  t.equal(failed.length, 50, 'every clashing request was refused');
  t.ok(failed.every((e) => e.code === 'exists' && e.field === '/addressing/ipv4'));
  t.equal(new Set(ok.map((e) => e.id)).size, 1000, 'no duplicate ID');
  t.equal(new Set(ok.map((e) => e.ipv4)).size, 1000, 'no duplicate IPv4');
  t.equal(new Set(ok.map((e) => e.ipv6)).size, 1000, 'no duplicate IPv6');
  t.ok(ok.every((e) => e.id >= 1 && e.id <= 4095));
  await s.mgr.regenerateAll('settle');
  t.ok(s.mgr.list().every((e) => e.state === 'ready'), 'all ready');
  t.equal(readdirSync(s.dir).length, 1000, 'one state directory each');
});

t.test('sync-build failure removes the endpoint (IPs allocated for it kept for the CNI, its own reservations released) and returns the error', async (t) => {
  const s = await start(t, 'syncfail');
  s.datapath.failLoad = new Error('verifier rejected the program');
  s.ipam.allocateIP('10.200.0.1', 'default/pod-1');
  s.ipam.allocateIP('fd00::1', 'default/pod-1');
  await t.rejects(s.api.createEndpoint(ctx, req(1)), { code: 'failed', message: /removed.*verifier rejected/ });
  t.equal(s.mgr.size, 0);
  t.same(s.ipam.released, [], 'no IP released: the CNI plugin that allocated them releases them');
  t.same([s.ipam.ownerOf('10.200.0.1'), s.ipam.users.size], ['default/pod-1', 0], 'still allocated to their owner, no longer used by an endpoint');
  await t.rejects(s.api.createEndpoint(ctx, req(2)), { code: 'failed' });
  t.same(s.ipam.released, ['10.200.0.2', 'fd00::2'], 'addresses the endpoint reserved itself are released: nobody else would');
  t.same(readdirSync(s.dir), [], 'no state directory and no _next');
  t.equal(s.identities.refs(256), 0, 'identity released');
  t.same(s.h.hive.get(EndpointManagerImplToken).list(), []);
});

t.test('async build failure: endpoint stays, not ready, recovery controller retries until it works', async (t) => {
  const s = await start(t, 'recover');
  s.datapath.failLoad = new Error('load failed');
  const ep = await s.api.createEndpoint(ctx, req(1, { 'sync-build-endpoint': false }));
  await t.rejects(ep.regenerate('wait'), /load failed/);
  t.equal(ep.state, 'waiting-to-regenerate');
  t.equal(ep.health().bpf, 'Failure');
  t.ok(ep.log().some((l) => l.code === 'failed' && /load failed/.test(l.message)));
  t.ok(ep.toModel().status.controllers?.some((c) => (c as { name: string }).name === `endpoint-${ep.id}-regeneration-recovery`));
  const moduleHealth = () => s.h.hive.health.snapshot().children.find((c) => c.name === 'endpoint');
  t.match(moduleHealth(), { level: 'degraded', message: new RegExp(`1 of 1 endpoints failed to regenerate: ${ep.id}: .*load failed`) });
  s.datapath.failLoad = undefined;
  for (let i = 0; i < 100 && ep.state !== 'ready'; i++) await new Promise((r) => setTimeout(r, 50));
  t.equal(ep.state, 'ready', 'recovered');
  t.match(moduleHealth(), { level: 'ok', message: '1 endpoints' });
  t.notOk(existsSync(join(s.dir, `${ep.id}_next`)));
});

t.test('policy changes regenerate only affected endpoints, without a program reload', async (t) => {
  const s = await start(t, 'policy');
  const a = await s.api.createEndpoint(ctx, req(1, { labels: ['k8s:app=a'] }));
  const b = await s.api.createEndpoint(ctx, req(2, { labels: ['k8s:app=b'] }));
  const loads = s.datapath.loader.history.length;
  s.policy.entriesFor = (id) => (id === a.identity ? [{ identity: b.identity!, direction: 'ingress', protocol: 6, port: 80, deny: false }] : []);
  s.policy.emit(new Set([a.identity!]));
  await new Promise((r) => setTimeout(r, 20));
  await a.regenerate('settle');
  t.same(s.policy.resolved.filter((id) => id === b.identity).length, 1, 'b not regenerated');
  t.same(s.datapath.maps.policyOf(a.id), [{ identity: b.identity, direction: 'ingress', protocol: 6, port: 80, deny: false }]);
  t.same(a.toModel().status.policy?.realized?.['allowed-ingress-identities'], [b.identity]);
  t.equal(a.toModel().status.policy?.realized?.['policy-revision'], 2);
  t.equal(s.datapath.loader.history.length, loads, 'no-rebuild: no program reload');
  s.policy.emit('all');
  await new Promise((r) => setTimeout(r, 20));
  await Promise.all([a.regenerate('settle'), b.regenerate('settle')]);
  t.equal(s.policy.resolved.filter((id) => id === b.identity).length, 3, "'all' reaches every endpoint");
});

t.test('patchLabels: new identity (old released), promoted to rewrite+load', async (t) => {
  const s = await start(t, 'labels');
  const ep = await s.api.createEndpoint(ctx, req(1));
  const old = ep.identity!;
  const loads = s.datapath.loader.history.length;
  await s.api.patchLabels(ctx, String(ep.id), ['k8s:version=2'], []);
  t.not(ep.identity, old);
  t.equal(s.identities.refs(old), 0, 'old identity released');
  t.equal(s.identities.refs(ep.identity!), 1);
  t.equal(s.datapath.loader.history.length, loads + 1, 'identity is a program constant: reloaded');
  t.equal(s.datapath.maps.lookupIPCache('10.200.0.1')?.identity, ep.identity);
  t.same(ep.toModel().spec['label-configuration']?.user, ['k8s:version=2']);
  await t.rejects(s.api.patchLabels(ctx, String(ep.id), [], ['k8s:nothere=1']), { code: 'invalid', field: '/delete/0' });
  await s.api.patchLabels(ctx, String(ep.id), [], ['k8s:version=2']);
  t.same(s.identities.lookup(ep.identity!)?.labels, ['k8s:app=web', 'k8s:io.kubernetes.pod.namespace=default'], 'identity of the original labels again');
  await t.rejects(s.api.patchLabels(ctx, '999', [], []), { code: 'not-found' });
  await t.rejects(s.api.patchLabels(ctx, 'bogus:1', [], []), { code: 'invalid' });
});

t.test('patchConfig: validated, promoted to rewrite+load by the config hash', async (t) => {
  const s = await start(t, 'config');
  const ep = await s.api.createEndpoint(ctx, req(1));
  const loads = s.datapath.loader.history.length;
  await t.rejects(s.api.patchConfig(ctx, String(ep.id), { Nope: 'Enabled' }), { code: 'invalid', field: '/options/Nope' });
  await t.rejects(s.api.patchConfig(ctx, String(ep.id), { Debug: 'yes' }), { code: 'invalid', field: '/options/Debug' });
  await s.api.patchConfig(ctx, String(ep.id), { Debug: 'Disabled' });
  t.equal(s.datapath.loader.history.length, loads, 'unchanged option: nothing regenerated');
  await s.api.patchConfig(ctx, String(ep.id), { Debug: 'Enabled' });
  t.equal(s.datapath.loader.history.length, loads + 1, 'changed option: program reloaded');
  t.equal(s.datapath.loader.get(ep.id)?.config.options?.Debug, 'Enabled');
  t.match(readFileSync(join(s.dir, String(ep.id), 'ep_config.h'), 'utf8'), /#define DEBUG 1/);
  t.equal(ep.toModel().spec.options?.Debug, 'Enabled');
});

t.test('patchEndpoint: mutable fields change, identity fields refuse', async (t) => {
  const s = await start(t, 'patch');
  const ep = await s.api.createEndpoint(ctx, req(1));
  await t.rejects(s.api.patchEndpoint(ctx, String(ep.id), { addressing: { ipv4: '10.200.9.9' } }), { code: 'invalid', field: '/addressing/ipv4' });
  await t.rejects(s.api.patchEndpoint(ctx, String(ep.id), { 'container-id': 'other' }), { code: 'invalid', field: '/container-id' });
  await t.rejects(s.api.patchEndpoint(ctx, String(ep.id), { mac: 'bad' }), { code: 'invalid', field: '/mac' });
  await s.api.patchEndpoint(ctx, String(ep.id), { 'interface-index': 77, addressing: { ipv4: '10.200.0.1' }, labels: ['k8s:app=api'] });
  t.equal(s.datapath.loader.get(ep.id)?.config.ifIndex, 77);
  t.same(ep.labels, ['k8s:app=api', 'k8s:io.kubernetes.pod.namespace=default']);
});

t.test('delete by id and by container id: datapath, identity, state dir and IPs cleaned up', async (t) => {
  const s = await start(t, 'delete');
  const deleted: EndpointView[] = [];
  s.mgr.deleted$.subscribe((e) => deleted.push(e));
  const a = await s.api.createEndpoint(ctx, req(1));
  const b = await s.api.createEndpoint(ctx, req(2, { 'container-id': 'shared', 'container-interface-name': 'eth0' }));
  const c = await s.api.createEndpoint(ctx, req(3, { 'container-id': 'shared', 'container-interface-name': 'eth1' }));
  t.equal(s.mgr.lookup('cni-attachment-id:shared:eth1'), c);
  await s.api.deleteEndpoint(ctx, `ipv4:${a.ipv4}`);
  t.equal(a.state, 'disconnected');
  t.same(s.ipam.released, ['10.200.0.1', 'fd00::1']);
  t.equal(s.datapath.maps.lookupEndpoint('10.200.0.1'), undefined);
  t.equal(s.datapath.maps.lookupIPCache('10.200.0.1'), undefined);
  t.equal(s.datapath.maps.policyOf(a.id), undefined);
  t.equal(s.datapath.loader.get(a.id), undefined);
  t.notOk(existsSync(join(s.dir, String(a.id))));
  await t.rejects(s.api.deleteEndpoint(ctx, String(a.id)), { code: 'not-found' });
  t.equal(await s.api.deleteEndpointsByContainerID(ctx, 'shared'), 2);
  t.equal(await s.api.deleteEndpointsByContainerID(ctx, 'shared'), 0);
  t.equal(deleted[0], a);
  t.same(new Set(deleted), new Set([a, b, c]), 'EndpointDeleted for each');
  t.equal(s.identities.refs(a.identity ?? 256), 0, 'identities released');
  t.same(readdirSync(s.dir), []);
});

t.test('GC marks endpoints whose interface is gone and removes them on the next round (timer)', async (t) => {
  const s = await start(t, 'gc', { 'endpoint-gc-interval': '30ms' });
  const a = await s.api.createEndpoint(ctx, req(1));
  const b = await s.api.createEndpoint(ctx, req(2));
  s.links.gone.add('lxc1');
  for (let i = 0; i < 200 && s.mgr.lookup(String(a.id)); i++) await new Promise((r) => setTimeout(r, 10));
  t.equal(s.mgr.lookup(String(a.id)), undefined, 'removed');
  t.ok(a.log().some((l) => /not found; the endpoint is removed at the next GC round/.test(l.message)), 'was marked first');
  t.equal(s.mgr.lookup(String(b.id)), b, 'the other stays');
});

t.test('periodic regeneration runs on its interval', async (t) => {
  const s = await start(t, 'periodic', { 'endpoint-regen-interval': '20ms' });
  const ep = await s.api.createEndpoint(ctx, req(1));
  const done = () => ep.log().some((l) => /Successfully regenerated endpoint program \(no-rebuild\) due to periodic endpoint regeneration/.test(l.message));
  for (let i = 0; i < 200 && !done(); i++) await new Promise((r) => setTimeout(r, 10));
  t.ok(done(), 'regenerated by the periodic job');
});

t.test('a regeneration blocked in the datapath: requests coalesce into one more run', async (t) => {
  const s = await start(t, 'coalesce');
  const ep = await s.api.createEndpoint(ctx, req(1));
  let open!: () => void;
  s.datapath.gate = new Promise<void>((r) => (open = r));
  const running = ep.regenerate('first', 'rewrite+load');
  await new Promise((r) => setTimeout(r, 10));
  t.equal(ep.state, 'regenerating');
  const more = [ep.regenerate('a'), ep.regenerate('b', 'rewrite+load'), ep.regenerate('c')];
  t.equal(ep.state, 'waiting-to-regenerate');
  const loads = s.datapath.loader.history.length;
  open();
  s.datapath.gate = undefined;
  await Promise.all([running, ...more]);
  t.equal(s.datapath.loader.history.length, loads + 2, 'two runs: the blocked one and one for a, b, c');
  t.ok(ep.log().some((l) => /\(rewrite\+load\) due to a, b, c/.test(l.message)));
});

t.test('gcRound: mark, recover when the interface comes back, remove on the second round', async (t) => {
  const s = await start(t, 'gcround');
  const ep = await s.api.createEndpoint(ctx, req(1));
  const log = s.h.hive.log;
  s.links.gone.add('lxc1');
  t.same(await gcRound(s.mgr, s.links.check, log), { marked: [ep.id], removed: [], recovered: [] });
  t.equal(ep.state, 'not-ready', 'a marked endpoint reports not-ready');
  t.equal(ep.toModel().status.health?.connected, false);
  s.links.gone.delete('lxc1');
  t.same(await gcRound(s.mgr, s.links.check, log), { marked: [], removed: [], recovered: [ep.id] });
  t.equal(ep.state, 'ready');
  s.links.gone.add('lxc1');
  await gcRound(s.mgr, s.links.check, log);
  t.same(await gcRound(s.mgr, s.links.check, log), { marked: [], removed: [ep.id], recovered: [] });
  t.equal(ep.state, 'disconnected');
  t.same(await gcRound(s.mgr, s.links.check, log), { marked: [], removed: [], recovered: [] });
});

/** The policy revision an endpoint reports as realized. */
function model0Revision(ep: { toModel(): { status: { policy?: { realized?: { 'policy-revision'?: number } } } } }): number | undefined {
  return ep.toModel().status.policy?.realized?.['policy-revision'];
}
