// One owner per interface and no leaks after a crash (issue 11), on the CNI server over the real
// control-plane cells (memory datapath) and a FakeNet: a chained ADD onto another endpoint's pod
// interface and an ADD whose host interface another endpoint holds are refused (code 102) and
// change nothing of the holder, whose DEL-less neighbour cannot remove its interface either; the
// journal of host interfaces (<state-dir>/cni-attachments) follows ADD, DEL and rollbacks; what a
// crash left (an interface and a record, no endpoint) is removed at start and by GC, with its IPs,
// unless an endpoint holds it, the runtime still lists it, or a command is working on it.
import t from 'tap';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { hostIfName } from '../../src/cells/cni-server/index.js';
import { body, cniReq, rig, type Rig } from './helpers.js';

async function add(r: Rig, id: string, extra: Partial<Parameters<typeof cniReq>[1]> = {}, conf: Record<string, unknown> = {}) {
  const ns = extra.netns ?? `/run/netns/${id}`;
  if (!r.net.netnsExists(ns)) r.net.addNetns(ns);
  return r.server.handle(cniReq('ADD', { containerId: id, netns: ns, args: `IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=${id}`, ...extra }, conf));
}

function code(resp: { exitCode: number; body: string }): number {
  return resp.exitCode === 0 ? 0 : (body(resp).code as number);
}

const journalDir = (r: Rig): string => r.deps.journal.dir;
const records = (r: Rig): string[] => (existsSync(journalDir(r)) ? readdirSync(journalDir(r)).sort() : []);
const gcReq = (valid: Array<{ containerID: string; ifname: string }>) => cniReq('GC', { containerId: '', netns: '', ifName: '' }, { 'cni.dev/valid-attachments': valid }, '1.1.0');

t.test("a chained ADD onto another endpoint's pod interface is refused, and its DEL leaves the other alone", async (t) => {
  const r = await rig(t);
  const first = await add(r, 'victim');
  t.equal(first.exitCode, 0, first.body);
  const victim = r.deps.manager.lookup('cni-attachment-id:victim:eth0')!;
  const lxc = hostIfName('victim', 'eth0');
  const pod = r.net.namespaces.get('/run/netns/victim')!.links.get('eth0')!;
  const before = { model: victim.toModel().status.networking, ips: r.deps.ipam.status()[0]!.allocated };
  const prevResult = {
    cniVersion: '1.0.0',
    interfaces: [{ name: 'eth0', mac: pod.mac, sandbox: '/run/netns/victim' }],
    ips: [{ address: '10.200.0.99/32', interface: 0 }],
  };
  const takeover = await add(r, 'intruder', { netns: '/run/netns/victim' }, { prevResult });
  t.equal(code(takeover), 102, 'refused with the endpoint error code');
  t.match(body(takeover).msg, new RegExp(`chaining onto eth0 in /run/netns/victim \\(prevResult\\): host interface ${lxc} already belongs to endpoint ${victim.id} \\(container victim, interface eth0\\); one endpoint per interface`));
  t.same(r.deps.manager.getEndpoints().map((e) => e.id), [victim.id], 'no second endpoint');
  t.equal(r.deps.manager.lookup('ipv4:10.200.0.99'), undefined, "the prevResult's IP is nobody's");
  t.same(r.deps.ipam.status()[0]!.allocated, before.ips, 'IPAM unchanged');

  const del = await r.server.handle(cniReq('DEL', { containerId: 'intruder', netns: '/run/netns/victim' }, { prevResult }));
  t.same(del, { exitCode: 0, body: '' }, "the intruder's DEL succeeds");
  t.equal(r.deps.manager.lookup('cni-attachment-id:victim:eth0'), victim, 'the victim endpoint is still there');
  t.equal(victim.state, 'ready');
  t.same(victim.toModel().status.networking, before.model, 'with the same interface and addresses');
  t.ok(r.net.hostNs.links.get(lxc)?.up, 'and its host interface, up');
  t.same(records(r), [`${lxc}.json`], "and its journal record (the intruder's DEL had none to remove)");
});

t.test('an ADD whose host interface another endpoint holds is refused before anything is done', async (t) => {
  const r = await rig(t);
  const lxc = hostIfName('taken', 'eth0');
  const squatter = await r.deps.endpoints.createEndpoint({}, {
    'container-id': 'api-made', 'interface-name': lxc, addressing: { ipv4: '10.200.3.3' }, 'sync-build-endpoint': true,
  });
  r.net.addNetns('/run/netns/taken');
  const calls = r.net.calls.length;
  const allocated = { ...r.deps.ipam.status()[0]!.allocated };
  const resp = await add(r, 'taken');
  t.equal(code(resp), 102);
  t.match(body(resp).msg, new RegExp(`creating the host side of eth0: host interface ${lxc} already belongs to endpoint ${squatter.id}`));
  t.same(r.net.calls.slice(calls).filter((c) => !/^(getLink|listLinks)@/.test(c)), [], 'no interface made or changed (lookups only)');
  t.same(r.deps.ipam.status()[0]!.allocated, allocated, 'no IP allocated');
  t.same(records(r), [], 'nothing journalled');
  t.equal(squatter.state, 'ready', 'the holder is untouched');
  // a DEL of that attachment must not delete the holder's interface either
  r.net.hostNs.links.set(lxc, { ...r.net.hostNs.links.get('lo')!, name: lxc, index: 4242, addrs: [] });
  t.same(await r.server.handle(cniReq('DEL', { containerId: 'taken', netns: '/run/netns/taken' })), { exitCode: 0, body: '' });
  t.ok(r.net.hostNs.links.has(lxc), "DEL leaves an interface another endpoint holds");
});

t.test('the journal follows ADD, DEL and a rollback', async (t) => {
  const r = await rig(t);
  const lxc = hostIfName('j1', 'eth0');
  const resp = await add(r, 'j1');
  t.equal(resp.exitCode, 0, resp.body);
  const ip = (body(resp).ips as Array<{ address: string }>)[0]!.address.split('/')[0]!;
  t.same(records(r), [`${lxc}.json`], 'one record per host interface');
  t.same(JSON.parse(readFileSync(join(journalDir(r), `${lxc}.json`), 'utf8')), { containerId: 'j1', ifName: 'eth0', hostName: lxc, ips: [{ ip, owner: 'default/j1' }] });
  await r.server.handle(cniReq('DEL', { containerId: 'j1', netns: '/run/netns/j1' }));
  t.same(records(r), [], 'DEL removes it with the interface');

  r.net.fail('addRoute', 'host');
  const failed = await add(r, 'j2');
  t.equal(code(failed), 5, 'an ADD failing after the veth was made');
  t.same(records(r), [], 'its rollback removed the interface and then the record');
  r.net.clearFailures();
  r.net.fail('deleteLink', 'host');
  r.net.fail('addRoute', 'host');
  await add(r, 'j3');
  t.ok(r.net.hostNs.links.has(hostIfName('j3', 'eth0')), 'a rollback that could not delete the interface…');
  t.same(records(r), [`${hostIfName('j3', 'eth0')}.json`], '…keeps its record, so a later sweep finds it');
  r.net.clearFailures();
  const swept = await r.server.removeOrphans('test');
  t.same(swept.interfaces, [hostIfName('j3', 'eth0')]);
  t.notOk(r.net.hostNs.links.has(hostIfName('j3', 'eth0')), 'and removes it');
});

/** What a crash mid-ADD leaves: the record and the veth, with the IP allocated (as IPAM would hold it if it kept state), no endpoint. */
async function crashLeftovers(r: Rig, id: string, ip: string): Promise<string> {
  const lxc = hostIfName(id, 'eth0');
  r.net.addNetns(`/run/netns/${id}`);
  await r.net.host().createVeth({ name: lxc, peerName: 'eth0', peerNetns: `/run/netns/${id}` });
  mkdirSync(journalDir(r), { recursive: true });
  r.deps.ipam.allocateIP(ip, `default/${id}`);
  writeFileSync(join(journalDir(r), `${lxc}.json`), JSON.stringify({ containerId: id, ifName: 'eth0', hostName: lxc, ips: [{ ip, owner: `default/${id}` }] }));
  return lxc;
}

t.test('at start, interfaces no endpoint holds are removed with their IPs; held ones stay', async (t) => {
  const r = await rig(t);
  const kept = await add(r, 'alive');
  t.equal(kept.exitCode, 0, kept.body);
  const dead = await crashLeftovers(r, 'dead', '10.200.0.50');
  mkdirSync(journalDir(r), { recursive: true });
  const torn = hostIfName('torn', 'eth0');
  r.net.hostNs.links.set(torn, { ...r.net.hostNs.links.get('lo')!, name: torn, index: 4343, addrs: [] });
  writeFileSync(join(journalDir(r), `${torn}.json`), '{"containerId":"to');
  writeFileSync(join(journalDir(r), 'lxcnotours.json'), '{}');
  const gone = hostIfName('never-made', 'eth0');
  writeFileSync(join(journalDir(r), `${gone}.json`), JSON.stringify({ containerId: 'never-made', ifName: 'eth0', hostName: gone, ips: [] }));

  const out = await r.server.removeOrphans('at start');
  t.same(out.interfaces.sort(), [dead, gone, torn].sort(), 'the dead ADD, the torn record and the record of an interface never made');
  t.same(out.ips, ['10.200.0.50'], "the dead ADD's IP released");
  t.notOk(r.net.hostNs.links.has(dead), 'its interface is gone');
  t.notOk(r.net.hostNs.links.has(torn), 'the torn record still named its interface');
  t.ok(r.net.hostNs.links.has(hostIfName('alive', 'eth0')), 'the interface an endpoint holds stays');
  t.same(records(r), [`${hostIfName('alive', 'eth0')}.json`, 'lxcnotours.json'], "only the live record is left (and a file that is not the journal's)");
  t.equal(r.deps.ipam.ownerOf('10.200.0.50'), undefined);
  t.same((await r.server.removeOrphans('again')).interfaces, [], 'a second sweep finds nothing');
});

t.test('GC removes interfaces no endpoint holds unless the runtime lists them or a command is on them', async (t) => {
  const r = await rig(t);
  const listed = await crashLeftovers(r, 'listed', '10.200.0.60');
  const stale = await crashLeftovers(r, 'stale', '10.200.0.61');
  const busy = await crashLeftovers(r, 'busy', '10.200.0.62');
  let release!: () => void;
  const holding = r.deps.ledger.withLock('busy:eth0', () => new Promise<void>((res) => (release = res)));
  const resp = await r.server.handle(gcReq([{ containerID: 'listed', ifname: 'eth0' }]));
  t.same(resp, { exitCode: 0, body: '' });
  t.notOk(r.net.hostNs.links.has(stale), 'the unlisted one is removed');
  t.equal(r.deps.ipam.ownerOf('10.200.0.61'), undefined, 'with its IP');
  t.ok(r.net.hostNs.links.has(listed), 'a listed attachment is kept');
  t.ok(r.net.hostNs.links.has(busy), 'one with a command in progress is kept');
  release();
  await holding;
  await r.server.handle(gcReq([{ containerID: 'listed', ifname: 'eth0' }]));
  t.notOk(r.net.hostNs.links.has(busy), 'the next GC removes it');
  t.equal(r.deps.ipam.ownerOf('10.200.0.60'), 'default/listed');
});
