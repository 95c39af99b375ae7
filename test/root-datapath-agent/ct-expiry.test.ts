// Privileged, BPF datapath (issue 13, conntrack lifetimes, GC and scrub end to end): the agent in
// this process with a 2 s non-TCP lifetime (--bpf-ct-timeout-regular-any) and a 1 s garbage
// collection interval (--conntrack-gc-interval). Real UDP and TCP traffic between pods leaves
// entries whose lifetime is the flag's; the garbage collector removes them once expired; deleting
// an endpoint removes the entries of its address (and only those) without waiting for the next run.
import t from 'tap';
import { CtMaps, monotonicSeconds, type CtMapName } from '../../src/maps/index.js';
import type { CtEntry, CtKey } from '../../src/datapath/conntrack.js';
import { SMALL_CT, ask, serve } from './ct-fixtures.js';
import { Cleanup, allocatePod, bpfRoot, connects, endpointRequest, skipReason, startBpfAgent, until } from './fixtures.js';

const POOL = '10.243.1.0/24';

function entries(root: string): { map: CtMapName; key: CtKey; entry: CtEntry }[] {
  const ct = CtMaps.openPinned(root);
  try {
    return ct.entries();
  } finally {
    ct.close();
  }
}

t.test('short lifetimes from flags expire; the garbage collector and endpoint deletion remove entries', { skip: skipReason() }, async (t) => {
  const c = new Cleanup(t);
  const root = bpfRoot(c);
  const agent = await startBpfAgent(c, root, POOL, { ...SMALL_CT, 'bpf-ct-timeout-regular-any': '2s', 'conntrack-gc-interval': '1s' });
  const client = await allocatePod(c, agent.client, 'client');
  const server = await allocatePod(c, agent.client, 'server');
  const other = await allocatePod(c, agent.client, 'other');
  await agent.client.createEndpoint(0, endpointRequest(client, ['k8s:app=client']));
  const serverEp = await agent.client.createEndpoint(0, endpointRequest(server, ['k8s:app=server']));
  await agent.client.createEndpoint(0, endpointRequest(other, ['k8s:app=other']));
  await serve(c, server, 'udpecho', 5353);

  const udp = (e: { key: CtKey }): boolean => e.key.nexthdr === 17 && e.key.dport === 5353 && e.key.daddr === client.ip;
  t.equal(await ask(client, server, 5353), 'answered', 'a UDP request and its answer');
  const now = monotonicSeconds();
  const fresh = entries(root).filter(udp);
  t.equal(fresh.length, 2, 'tracked on both endpoints (OUT at the client, IN at the server)', { fresh });
  t.ok(fresh.every((e) => e.entry.lifetime <= now + 2 && e.entry.lifetime >= now - 1), 'with the 2 s lifetime of the flag', { lifetimes: fresh.map((e) => e.entry.lifetime), now });
  t.ok(await until(() => !entries(root).some(udp), 8000, 200), 'the garbage collector removed them once expired');

  t.ok(await connects(client, server, 80), 'client -> server:80');
  t.ok(await connects(client, other, 80), 'client -> other:80');
  const names = (ip: string) => (e: { key: CtKey }): boolean => e.key.daddr === ip || e.key.saddr === ip;
  t.ok(entries(root).some(names(server.ip)), "the server's connection is tracked");
  await agent.client.deleteEndpoint(serverEp.id);
  t.ok(await until(() => !entries(root).some(names(server.ip)), 5000, 100), "deleting the server's endpoint removed every entry naming its address");
  t.ok(entries(root).some(names(other.ip)), 'the connection to the other pod is still tracked');
});
