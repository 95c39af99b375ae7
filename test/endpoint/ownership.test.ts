// One owner per interface and programs that vanish (issue 11, "Done means" 2 and 3), with the
// endpoint cell over mocks and the in-memory loader: a second endpoint on a host interface is
// refused (create and patch) and the first one keeps everything; a program taken off its interface
// behind the agent's back is found by the next regeneration or by the datapath's check, the
// endpoint's health shows it until the reload put it back; restore hands the datapath the
// restored endpoints before any new one can be created, and again once they are regenerated.
import t from 'tap';
import { testHive, type TestLike } from '../../src/hive/index.js';
import { statedirCell } from '../../src/cells/statedir/index.js';
import {
  endpointCell, EndpointAPIManagerToken, EndpointManagerImplToken, EndpointRestorerToken, type EndpointChangeRequest,
} from '../../src/cells/endpoint/index.js';
import { mocks, request, tempStateDir, type Mocks } from './mocks.js';

const ctx = {};
const req = (n: number, extra: Record<string, unknown> = {}) => request(n, extra) as EndpointChangeRequest;

async function start(t: TestLike, dir: string, m: Mocks = mocks()) {
  const h = await testHive(t, [statedirCell, endpointCell], { replace: m.replace, config: { 'state-dir': dir } });
  return { ...m, h, api: h.get(EndpointAPIManagerToken), mgr: h.get(EndpointManagerImplToken), done: h.get(EndpointRestorerToken).done };
}

t.test('a host interface has one endpoint: a second one is refused, create or patch, and the first keeps everything', async (t) => {
  const s = await start(t, tempStateDir(t, 'own'));
  const first = await s.api.createEndpoint(ctx, req(1));
  const loaded = s.datapath.loader.get(first.id);
  await t.rejects(s.api.createEndpoint(ctx, req(2, { 'interface-name': 'lxc1' })), {
    code: 'exists', field: '/interface-name', message: new RegExp(`host interface lxc1 already belongs to endpoint ${first.id} \\(CNI attachment container-1:eth0\\)`),
  }, 'a second endpoint on lxc1 is refused naming the holder');
  t.equal(s.mgr.size, 1, 'nothing was added');
  t.same(s.datapath.loader.get(first.id), loaded, "the first endpoint's program is untouched");
  t.equal(s.datapath.maps.lookupEndpoint('10.200.0.2'), undefined, 'no map entry for the refused one');

  const second = await s.api.createEndpoint(ctx, req(2));
  await t.rejects(s.api.patchEndpoint(ctx, String(second.id), { 'interface-name': 'lxc1' } as EndpointChangeRequest), { code: 'exists', field: '/interface-name' }, 'a patch cannot move onto it either');
  t.equal(second.ifName, 'lxc2', 'the refused patch changed nothing');
  await s.api.patchEndpoint(ctx, String(second.id), { 'interface-name': 'lxc9' } as EndpointChangeRequest);
  t.equal(s.datapath.loader.get(second.id)?.config.ifName, 'lxc9', 'a free interface is fine (reloaded there)');
  const third = await s.api.createEndpoint(ctx, req(3, { 'interface-name': 'lxc2' }));
  t.equal(third.ifName, 'lxc2', 'the interface the patch left is free again');
  await t.rejects(s.api.createEndpoint(ctx, req(4, { 'interface-name': 'lxc9' })), { code: 'exists', field: '/interface-name' }, 'the one it moved to is taken');
  await s.api.deleteEndpoint(ctx, String(first.id));
  t.equal((await s.api.createEndpoint(ctx, req(5, { 'interface-name': 'lxc1' }))).ifName, 'lxc1', 'a deleted endpoint frees its interface');
});

t.test('a program taken off behind the agent\'s back: the next regeneration reloads it', async (t) => {
  const s = await start(t, tempStateDir(t, 'regen'));
  const ep = await s.api.createEndpoint(ctx, req(1));
  const before = s.datapath.loader.get(ep.id)!.generation;
  await ep.regenerate('periodic endpoint regeneration', 'no-rebuild');
  t.equal(s.datapath.loader.get(ep.id)!.generation, before, 'with the program in place, no-rebuild does not reload');
  s.datapath.loader.detachByHand(ep.id);
  t.match(await s.datapath.loader.checkAttached(ep.id), /no longer attached to lxc1/);
  await ep.regenerate('periodic endpoint regeneration', 'no-rebuild');
  t.equal(s.datapath.loader.get(ep.id)!.generation, before + 1, 'the no-rebuild run was promoted to a reload');
  t.equal(await s.datapath.loader.checkAttached(ep.id), undefined, 'attached again');
  const log = ep.log().map((l) => `${l.code} ${l.message}`);
  t.ok(log.some((l) => /^failed Datapath program missing: its program is no longer attached to lxc1; reloading it$/.test(l)), 'the endpoint log says what was missing');
  t.ok(log.some((l) => /^ok Successfully regenerated endpoint program \(rewrite\+load\) due to periodic/.test(l)), 'and that it was reloaded');
  t.same(ep.health(), { bpf: 'OK', policy: 'OK', connected: true, overallHealth: 'OK' }, 'healthy again');
});

t.test('the datapath reports a lost program: health degrades until the reload puts it back', async (t) => {
  const s = await start(t, tempStateDir(t, 'lost'));
  const ep = await s.api.createEndpoint(ctx, req(1));
  const other = await s.api.createEndpoint(ctx, req(2));
  let open!: () => void;
  s.datapath.gate = new Promise<void>((r) => (open = r));
  s.datapath.loader.detachByHand(ep.id);
  s.datapath.lost.next({ endpointId: ep.id, why: 'its program from_container (id 7) is no longer attached at tc ingress of lxc1 (nothing is)' });
  await new Promise((r) => setImmediate(r)); // the observer job handles reports in order, asynchronously
  t.equal(ep.health().bpf, 'Failure', 'BPF health is not OK while the program is missing');
  t.not(ep.state, 'ready', `the endpoint does not report ready (${ep.state}: its reload is queued)`);
  t.equal(ep.toModel().status.health?.overallHealth, 'Failure', 'the API shows the failure');
  t.equal(other.health().bpf, 'OK', 'another endpoint is not affected');
  t.ok(ep.log().some((l) => /^Datapath program missing: its program from_container \(id 7\) is no longer attached at tc ingress of lxc1/.test(l.message)), 'the endpoint log says what is missing');
  open();
  s.datapath.gate = undefined;
  for (let i = 0; i < 200 && ep.health().bpf !== 'OK'; i++) await new Promise((r) => setTimeout(r, 5));
  t.equal(ep.health().bpf, 'OK', 'repaired');
  t.equal(ep.state, 'ready');
  t.equal(await s.datapath.loader.checkAttached(ep.id), undefined, 'the program is attached again');
  s.datapath.lost.next({ endpointId: 4096, why: 'an endpoint that does not exist' });
  t.pass('a report for an unknown endpoint is ignored');
});

t.test('restore hands the datapath the restored endpoints before new ones can be created, and after their regeneration', async (t) => {
  const dir = tempStateDir(t, 'restore');
  const one = await start(t, dir);
  const a = await one.api.createEndpoint(ctx, req(1));
  const b = await one.api.createEndpoint(ctx, req(2));
  await one.h.hive.stop();

  const m = mocks();
  m.links.gone.add('lxc2');
  m.datapath.staleIds = [b.id, 4000];
  const two = await start(t, dir, m);
  const created = await two.api.createEndpoint(ctx, req(3));
  const summary = await two.done;
  const calls = m.datapath.restoreCalls;
  t.same(calls[0], { step: 'removeStale', live: [{ id: a.id, ips: [a.ipv4, a.ipv6] }] }, 'step 1 with the restored endpoint only (the dropped one is stale)');
  t.same(calls[1]?.step, 'restoreDone');
  t.same(calls[1]?.live.map((e) => e.id).sort(), [a.id, created.id].sort(), 'step 2 with every endpoint there is by then');
  t.same(summary.staleRemoved, [b.id, 4000].sort((x, y) => x - y), 'the summary names what the datapath removed');
});
