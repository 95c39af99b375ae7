// Privileged, BPF datapath: LB maps sized by --bpf-lb-map-max (not the program's default) are the
// ones bpf_lxc uses: an endpoint's program loads with them bound (the loader hands their fds over
// instead of libbpf refusing a pinned map of another size), and a service written through the API
// reaches a backend pod through them. A Maglev table size the program cannot read stops the start
// with the flag and the fix.
import t from 'tap';
import { join } from 'node:path';
import { BpfMap } from '../../src/bpf/index.js';
import { endpointPrograms, programMapIds } from '../../src/cells/datapath-bpf/lxc/index.js';
import { LB_MAP_NAMES } from '../../src/datapath/lb-maps.js';
import { Cleanup, allocatePod, bpfRoot, endpointRequest, skipReason, startBpfAgent, until } from './fixtures.js';

const POOL = '10.246.0.0/24';

t.test('non-default LB map sizes: the program binds the agent\'s LB maps and a ClusterIP works', { skip: skipReason() }, async (t) => {
  const c = new Cleanup(t);
  const root = bpfRoot(c);
  await t.rejects(startBpfAgent(c, bpfRoot(c), '10.246.1.0/24', { 'bpf-lb-maglev-table-size': '251' }), /bpf-lb-maglev-table-size=251: bpf_lxc is compiled for Maglev tables of 16381 entries.*fix: leave the flag at 16381/, 'a Maglev size bpf_lxc cannot read: a clear error naming the flag and the fix');
  const agent = await startBpfAgent(c, root, POOL, { 'bpf-lb-map-max': '1024', 'bpf-lb-algorithm': 'maglev' });
  const services = BpfMap.openPinned(join(root, LB_MAP_NAMES.services4));
  c.teardown(() => services.close());
  t.equal(services.info.maxEntries, 1024, 'the pinned services map has --bpf-lb-map-max entries');
  const client = await allocatePod(c, agent.client, 'client');
  const server = await allocatePod(c, agent.client, 'server');
  const ep = await agent.client.createEndpoint(0, endpointRequest(client, ['k8s:app=client']));
  await agent.client.createEndpoint(0, endpointRequest(server, ['k8s:app=server']));
  t.equal(ep.status?.state, 'ready', 'the endpoint\'s program loaded');
  const attached = endpointPrograms(client.ifIndex).from_container;
  const progId = attached.legacy ?? attached.tcx[0]!;
  t.ok(programMapIds(progId).includes(services.info.id), 'bpf_lxc is bound to the agent\'s services map');

  const sid = server.traffic.nextId();
  server.traffic.command(`listen tcp ${server.ip} 8080 ${sid}`);
  t.ok(await server.traffic.waitFor('ready', sid, 10000), 'the backend listens');
  const created = await agent.client.putService(1, {
    id: 1, 'frontend-address': { ip: '10.96.46.1', port: 80, protocol: 'tcp' }, 'backend-addresses': [{ ip: server.ip, port: 8080 }],
  } as never);
  t.ok(created, 'PUT /service/1');
  t.ok(await until(async () => (await agent.client.getService(1)).status?.['cellium-state']?.state === 'done', 5000), 'the frontend is written');
  const cid = client.traffic.nextId();
  client.traffic.command(`connect 10.96.46.1 80 - 2000 ${cid}`);
  t.equal(await client.traffic.waitFor(['connected', 'failed'], cid, 6000), 'connected', 'the client reaches the backend through the VIP');

  // a restart with another --bpf-lb-map-max replaces the LB maps: the restored endpoints' programs
  // are reloaded to read the new ones (else a service added afterwards would never reach them)
  await agent.h.hive.stop();
  const again = await startBpfAgent(c, root, POOL, { 'bpf-lb-map-max': '2048', 'bpf-lb-algorithm': 'maglev' }, agent.dir);
  const services2 = BpfMap.openPinned(join(root, LB_MAP_NAMES.services4));
  c.teardown(() => services2.close());
  t.equal(services2.info.maxEntries, 2048, 'the services map was replaced with --bpf-lb-map-max entries');
  const boundToNew = (): boolean => {
    const a = endpointPrograms(client.ifIndex).from_container;
    const id = a.legacy ?? a.tcx[0];
    return id !== undefined && programMapIds(id).includes(services2.info.id);
  };
  t.ok(await until(async () => boundToNew(), 10000), 'the restored endpoint\'s program reads the new services map');
  await again.client.putService(2, {
    id: 2, 'frontend-address': { ip: '10.96.46.2', port: 80, protocol: 'tcp' }, 'backend-addresses': [{ ip: server.ip, port: 8080 }],
  } as never);
  t.ok(await until(async () => (await again.client.getService(2)).status?.['cellium-state']?.state === 'done', 5000), 'the new frontend is written');
  const cid2 = client.traffic.nextId();
  client.traffic.command(`connect 10.96.46.2 80 - 2000 ${cid2}`);
  t.equal(await client.traffic.waitFor(['connected', 'failed'], cid2, 6000), 'connected', 'the restored client reaches a service added after the restart');
});
