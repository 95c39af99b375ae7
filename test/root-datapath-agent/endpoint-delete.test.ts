// Privileged, BPF datapath (issue 6, "Done means" 1, last part): the whole agent in this process with
// --datapath-mode=bpf and two pods plumbed like the CNI plugin does. Proves that `PUT /v1/endpoint`
// puts the endpoint in the kernel (programs attached on its lxc interface, its policy map (and tcx
// link pins in tcx mode) under --bpf-root, its IP in cellium_lxc and cellium_ipcache, all visible through
// `cellium map list|get`), and that `DELETE /v1/endpoint/{id}` takes all of it out again (no program
// left on the interface, the pins gone, the entries gone from the kernel maps) while the other
// endpoint keeps its program, pins and entries.
import t from 'tap';
import { openIPCacheMap } from '../../src/maps/index.js';
import { policyMapName } from '../../src/datapath/map-names.js';
import { Cleanup, allocatePod, attachedCount, bpfRoot, cli, connects, endpointPins, endpointRequest, lxcEntries, skipReason, startBpfAgent, until } from './fixtures.js';

const POOLS = { legacy: '10.241.1.0/24', tcx: '10.241.2.0/24' } as const;

function ipcacheIdentity(root: string, ip: string): number | undefined {
  const m = openIPCacheMap(root);
  try {
    return m.get(`${ip}/32`)?.identity;
  } finally {
    m.close();
  }
}

for (const mode of ['legacy', 'tcx'] as const) t.test(`deleting an endpoint removes its programs, pins and map entries from the kernel (--bpf-attach-mode=${mode})`, { skip: skipReason() }, async (t) => {
  const c = new Cleanup(t);
  const root = bpfRoot(c);
  const agent = await startBpfAgent(c, root, POOLS[mode], { 'bpf-attach-mode': mode });
  const links = mode === 'tcx'; // legacy filters have no link pins
  const keep = await allocatePod(c, agent.client, 'keep');
  const gone = await allocatePod(c, agent.client, 'gone');
  const epKeep = await agent.client.createEndpoint(0, endpointRequest(keep, ['k8s:app=keep']));
  const epGone = await agent.client.createEndpoint(0, endpointRequest(gone, ['k8s:app=gone']));
  const identity = epGone.status?.identity?.id;
  t.ok(identity && identity >= 256, `the endpoint got a numeric identity (${identity})`);

  t.same(attachedCount(gone), { from_container: 1, to_container: 1 }, 'created: one program at each hook');
  t.same(endpointPins(root, epGone.id), { policy: true, from_container: links, to_container: links }, `created: policy map${links ? ' and both link pins' : ''} under the BPF root`);
  t.ok(await until(() => lxcEntries(root).get(gone.ip) === epGone.id, 5000), `created: cellium_lxc maps ${gone.ip} to endpoint ${epGone.id}`);
  t.ok(await until(() => ipcacheIdentity(root, gone.ip) === identity, 5000), `created: cellium_ipcache maps ${gone.ip}/32 to identity ${identity}`);
  t.ok(await connects(keep, gone, 80), 'traffic flows through both programs');

  const list = await cli(agent.socketPath, '-o', 'json', 'map', 'list');
  t.equal(list.code, 0, `cellium map list: ${list.err.trim()}`);
  const paths = ((JSON.parse(list.out || '{}') as { maps?: Array<{ path?: string }> }).maps ?? []).map((m) => m.path);
  for (const name of ['cellium_lxc', 'cellium_ipcache', policyMapName(epGone.id), policyMapName(epKeep.id)]) {
    t.ok(paths.includes(`${root}/${name}`), `cellium map list shows ${root}/${name}`);
  }
  const lxc = await cli(agent.socketPath, '-o', 'json', 'map', 'get', 'cellium_lxc');
  t.equal(lxc.code, 0, `cellium map get cellium_lxc: ${lxc.err.trim()}`);
  const lxcCache = (JSON.parse(lxc.out || '{}') as { cache?: unknown[] }).cache ?? [];
  t.ok(lxcCache.some((e) => JSON.stringify(e).includes(`"${gone.ip}`)), `cellium map get cellium_lxc lists ${gone.ip}`);

  await agent.client.deleteEndpoint(epGone.id);
  const lookup = await agent.client.getEndpoint(epGone.id).then(() => 200, (err: { status?: number }) => err.status);
  t.equal(lookup, 404, 'deleted: GET /v1/endpoint/{id} answers 404');
  t.ok(await until(() => attachedCount(gone).from_container + attachedCount(gone).to_container === 0, 5000), `deleted: no program attached on ${gone.hostIf}`);
  t.same(attachedCount(gone), { from_container: 0, to_container: 0 }, 'deleted: both hooks of the interface are empty');
  t.ok(await until(() => !Object.values(endpointPins(root, epGone.id)).some(Boolean), 5000), 'deleted: policy map and link pins removed');
  t.same(endpointPins(root, epGone.id), { policy: false, from_container: false, to_container: false }, 'deleted: no pin of the endpoint is left');
  t.ok(await until(() => !lxcEntries(root).has(gone.ip), 5000), `deleted: ${gone.ip} gone from cellium_lxc`);
  t.ok(await until(() => ipcacheIdentity(root, gone.ip) === undefined, 5000), `deleted: ${gone.ip}/32 gone from cellium_ipcache`);
  const after = await cli(agent.socketPath, '-o', 'json', 'map', 'get', policyMapName(epGone.id));
  t.not(after.code, 0, `cellium map get ${policyMapName(epGone.id)} fails once the endpoint is deleted`);

  t.same(attachedCount(keep), { from_container: 1, to_container: 1 }, 'the other endpoint keeps its programs');
  t.same(endpointPins(root, epKeep.id), { policy: true, from_container: links, to_container: links }, 'and its pins');
  t.equal(lxcEntries(root).get(keep.ip), epKeep.id, 'and its cellium_lxc entry');
});
