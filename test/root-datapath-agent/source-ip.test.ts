// Privileged, BPF datapath (issue 11, fail closed; issue 13, replies skip policy): the whole agent in
// this process with --datapath-mode=bpf and three pods plumbed like the CNI plugin does. The server
// admits only app=client. The app=bad pod gives itself the client's address and sends from it: the
// server's ingress policy would judge those packets by the client's identity (the identity of a
// packet comes from its source address), and a forged reply of the client's tracked connection
// would skip policy altogether. So bpf_lxc drops every packet a pod sends from an address that is
// not its own ('invalid-source', counted), as Cilium's bpf_lxc does (DROP_INVALID_SIP), before
// conntrack and policy see it; the pod's own traffic is untouched.
import t from 'tap';
import { readDropCounters } from '../../src/maps/index.js';
import { ip } from '../bpf/fixtures/topology.js';
import { Cleanup, allocatePod, bpfRoot, cli, endpointRequest, endpointsDiag, policyFile, skipReason, startBpfAgent } from './fixtures.js';
import { exchange } from '../bpf/fixtures/topology.js';

const POOL = '10.139.1.0/24';

t.test('a pod sending from another pod\'s address is dropped, not judged as that pod', { skip: skipReason() }, async (t) => {
  const c = new Cleanup(t);
  const root = bpfRoot(c);
  const agent = await startBpfAgent(c, root, POOL);
  const server = await allocatePod(c, agent.client, 'server');
  const client = await allocatePod(c, agent.client, 'client');
  const bad = await allocatePod(c, agent.client, 'bad');
  await agent.client.createEndpoint(0, endpointRequest(server, ['k8s:app=server']));
  await agent.client.createEndpoint(0, endpointRequest(client, ['k8s:app=client']));
  await agent.client.createEndpoint(0, endpointRequest(bad, ['k8s:app=bad']));
  const r = await cli(agent.socketPath, 'policy', 'import', '--wait', policyFile(agent.dir, 'server-from-client', {
    ingress: [{ fromEndpoints: [{ matchLabels: { app: 'client' } }], toPorts: [{ ports: [{ port: '5353', protocol: 'UDP' }] }] }],
  }));
  t.equal(r.code, 0, `policy import: ${r.err.trim()}`, r.code ? { endpoints: await endpointsDiag(agent.client) } : {});

  t.ok(await exchange('udp', client.traffic, server.traffic, client.ip, server.ip, 5353), 'the client reaches the server from its own address');
  t.notOk(await exchange('udp', bad.traffic, server.traffic, bad.ip, server.ip, 5353), 'the bad pod, from its own address, is denied');

  // the bad pod takes the client's address as a second one and sends from it
  ip('-n', bad.ns, 'addr', 'add', `${client.ip}/32`, 'dev', 'eth0');
  const before = readDropCounters(root)['invalid-source']?.packets ?? 0;
  t.notOk(await exchange('udp', bad.traffic, server.traffic, client.ip, server.ip, 5353), 'the bad pod sending from the client\'s address does not reach the server');
  const after = readDropCounters(root)['invalid-source']?.packets ?? 0;
  t.ok(after >= before + 3, `its datagrams are dropped as sent from an invalid source (${after - before} counted)`);
  t.ok(await exchange('udp', client.traffic, server.traffic, client.ip, server.ip, 5353), 'the client still reaches the server');
});
