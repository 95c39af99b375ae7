// Privileged, BPF datapath (issue 13, the default-deny-both-ways scenario): the whole agent in this
// process with --datapath-mode=bpf and two pods plumbed like the CNI plugin does. The client may
// reach the server on 80/TCP and 5353/UDP; each pod is otherwise default-deny in both directions
// (an ingress and an egress section in the policy selecting it). On real TCP and UDP traffic
// through the attached programs: the allowed flows and their replies pass (the server's replies
// are egress packets no rule allows), a second connection passes, the reverse direction is
// dropped, a UDP request to a closed port is refused by the ICMP error that comes back (related),
// ping is dropped until ICMP is allowed, and deleting the policies lets everything through.
import t from 'tap';
import { CtMaps, ctKeyText } from '../../src/maps/index.js';
import { ping } from '../bpf/fixtures/topology.js';
import { SMALL_CT, appPolicy, ask, peerPorts, serve } from './ct-fixtures.js';
import { Cleanup, allocatePod, bpfRoot, cli, connects, endpointRequest, endpointsDiag, skipReason, startBpfAgent } from './fixtures.js';

const POOL = '10.243.0.0/24';

t.test('default deny both ways: allowed flows and their replies pass, nothing else does', { skip: skipReason() }, async (t) => {
  const c = new Cleanup(t);
  const root = bpfRoot(c);
  const agent = await startBpfAgent(c, root, POOL, SMALL_CT);
  const client = await allocatePod(c, agent.client, 'client');
  const server = await allocatePod(c, agent.client, 'server');
  await agent.client.createEndpoint(0, endpointRequest(client, ['k8s:app=client']));
  await agent.client.createEndpoint(0, endpointRequest(server, ['k8s:app=server']));
  await serve(c, server, 'udpecho', 5353);

  const policy = async (...args: string[]): Promise<void> => {
    const r = await cli(agent.socketPath, 'policy', ...args, '--wait');
    t.equal(r.code, 0, `cellium policy ${args.join(' ')} --wait: ${r.err.trim()}`, r.code ? { endpoints: await endpointsDiag(agent.client) } : {});
  };
  const serverPolicy = (ingress: string[]) => appPolicy(agent.dir, 'server', 'server', { ingress: [peerPorts('fromEndpoints', 'client', ingress)], egress: [{}] });
  const clientPolicy = (egress: string[]) => appPolicy(agent.dir, 'client', 'client', { egress: [peerPorts('toEndpoints', 'server', egress)], ingress: [{}] });

  await policy('import', serverPolicy(['80/TCP', '5353/UDP']));
  await policy('import', clientPolicy(['80/TCP', '5353/UDP']));

  t.ok(await connects(client, server, 80), 'client -> server:80/TCP connects: the SYN-ACK and data come back as replies');
  t.ok(await connects(client, server, 80), 'a second connection passes too');
  t.equal(await ask(client, server, 5353), 'answered', 'client -> server:5353/UDP gets its answer (a reply out of a default-deny egress)');
  t.notOk(await connects(server, client, 80), 'server -> client:80/TCP (the reverse direction) is dropped');
  t.equal(await ask(client, server, 5354, 1200), 'timeout', 'client -> server:5354/UDP is not allowed: no answer, no error');

  const ct = CtMaps.openPinned(root);
  t.teardown(() => ct.close());
  const lines = ct.entries().map((e) => ctKeyText(e.key));
  t.ok(lines.some((l) => l.startsWith(`TCP OUT ${client.ip}:`) && l.endsWith(`-> ${server.ip}:80`)), 'the client side tracked its connection (TCP OUT)', { lines });
  t.ok(lines.some((l) => l.startsWith(`TCP IN ${client.ip}:`) && l.endsWith(`-> ${server.ip}:80`)), 'the server side tracked it as opened towards it (TCP IN)', { lines });
  t.ok(lines.some((l) => l.startsWith(`UDP OUT ${client.ip}:`) && l.endsWith(`-> ${server.ip}:5353`)), 'and the UDP flow', { lines });
  const listed = await cli(agent.socketPath, 'bpf', 'ct', 'list', 'global', '--bpf-root', root);
  const ip = (a: string): string => a.replaceAll('.', '\\.');
  t.match(listed.out, new RegExp(`^TCP OUT ${ip(client.ip)}:\\d+ -> ${ip(server.ip)}:80 expires=\\d+ .* SourceSecurityID=\\d+$`, 'm'), "cellium bpf ct list global shows it in Cilium's format");

  // The port is allowed but nothing listens: the server's ICMP port unreachable is an egress packet
  // of the server and an ingress packet of the client, related to the tracked flow both times.
  await policy('import', serverPolicy(['80/TCP', '5353/UDP', '5355/UDP']));
  await policy('import', clientPolicy(['80/TCP', '5353/UDP', '5355/UDP']));
  t.equal(await ask(client, server, 5355), 'refused', 'client -> server:5355/UDP (closed port) is refused: the ICMP error passes as related');

  t.notOk(await ping(client.ns, server.ip), 'ping client -> server is dropped: no ICMP rule');
  await policy('import', serverPolicy(['80/TCP', '5353/UDP', '0/ICMP']));
  await policy('import', clientPolicy(['80/TCP', '5353/UDP', '0/ICMP']));
  t.ok(await ping(client.ns, server.ip), 'with ICMP allowed client -> server: the echo reply comes back');
  t.notOk(await ping(server.ns, client.ip), 'ping server -> client is still dropped');

  await policy('delete', '--all');
  t.ok(await connects(server, client, 80), 'policies deleted: server -> client:80 connects');
  t.ok(await connects(client, server, 80), 'policies deleted: client -> server:80 connects');
  t.equal(await ask(client, server, 5353), 'answered', 'policies deleted: UDP answered');
  t.ok(await ping(server.ns, client.ip), 'policies deleted: ping server -> client');
});
