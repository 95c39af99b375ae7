// Privileged, BPF datapath (issue 6, "Done means" 2): the real `cellium-agent` process
// (bin/cellium-agent.js, built dist/) with --datapath-mode=bpf on a temporary state dir, socket and
// BPF root, three pods plumbed like the CNI plugin does (app=client, app=server, app=other). Proves
// that after `kill -9` of the agent the pinned programs keep working: a continuous ping between
// client and other keeps getting replies and the policy in force keeps being enforced on TCP
// (client -> server:80 connects; client -> server:81 and other -> server:80 are dropped); that the
// restarted agent restores the endpoints with the same IDs, identities and IPs (GET /v1/endpoint)
// without re-attaching their programs; and that a policy imported after the restart takes effect on
// real traffic.
import t from 'tap';
import type { Endpoint } from '../../src/api/models.js';
import { endpointPrograms } from '../../src/cells/datapath-bpf/lxc/index.js';
import {
  Cleanup, agentProcess, agentProcessSkip, allocatePod, cli, connects, endpointRequest, endpointsDiag, policyFile, startPing, tcpFrom, until,
} from './fixtures.js';

const POOL = '10.242.0.0/24';

/** id, identity and IPv4 of each endpoint, sorted by id. */
function summary(eps: readonly Endpoint[]): Array<{ id: number; identity?: number; ipv4?: string }> {
  return eps.map((e) => ({ id: e.id, identity: e.status?.identity?.id, ipv4: e.status?.networking?.addressing?.[0]?.ipv4 })).sort((a, b) => a.id - b.id);
}

t.test('programs keep enforcing while the agent is killed; the restarted agent restores the endpoints', { skip: agentProcessSkip() }, async (t) => {
  const c = new Cleanup(t);
  const { dir, socketPath, client, start, up } = agentProcess(c, 'restart', POOL);

  let agent = start();
  t.ok(await up(agent), 'the agent serves the API', { log: agent.log() });
  const pods = {
    client: await allocatePod(c, client, 'client'),
    server: await allocatePod(c, client, 'server'),
    other: await allocatePod(c, client, 'other'),
  };
  const { client: cl, server, other } = pods;
  await client.createEndpoint(0, endpointRequest(cl, ['k8s:app=client']));
  await client.createEndpoint(0, endpointRequest(server, ['k8s:app=server']));
  await client.createEndpoint(0, endpointRequest(other, ['k8s:app=other']));
  const before = summary(await client.listEndpoints());
  t.equal(before.length, 3, 'three endpoints');
  const progs = Object.values(pods).map((p) => endpointPrograms(p.ifIndex));

  const allowClient = policyFile(dir, 'server-allow-client-80', { ingress: [tcpFrom('client', 80)] });
  const imported = await cli(socketPath, 'policy', 'import', '--wait', allowClient);
  t.equal(imported.code, 0, `policy import: ${imported.err.trim()}`);
  t.ok(await connects(cl, server, 80), 'agent up: client -> server:80 connects');
  t.notOk(await connects(other, server, 80), 'agent up: other -> server:80 is dropped');

  const ping = startPing(c, other, cl);
  t.ok(await until(() => ping.replies() >= 3, 10000), 'ping other -> client gets replies');

  agent.proc.kill('SIGKILL');
  await agent.exited;
  t.equal(agent.proc.signalCode, 'SIGKILL', 'the agent was killed with SIGKILL');
  const atKill = ping.replies();
  t.ok(await until(() => ping.replies() >= atKill + 5, 10000), `agent down: the ping keeps getting replies (${ping.replies() - atKill} since the kill)`);
  t.ok(await connects(cl, server, 80), 'agent down: client -> server:80 still connects');
  t.notOk(await connects(cl, server, 81), 'agent down: client -> server:81 still dropped');
  t.notOk(await connects(other, server, 80), 'agent down: other -> server:80 still dropped');
  t.same(Object.values(pods).map((p) => endpointPrograms(p.ifIndex)), progs, 'agent down: the same programs are attached');
  const beforeRestart = ping.replies();
  t.ok(beforeRestart > atKill + 5, `agent down: replies kept coming during the TCP checks (${beforeRestart - atKill})`);

  agent = start();
  t.ok(await up(agent), 'the restarted agent serves the API', { log: agent.log() });
  const ready = await until(async () => {
    const eps = await client.listEndpoints().catch(() => []);
    return eps.length === 3 && eps.every((e) => e.status?.state === 'ready');
  }, 60000, 200);
  t.ok(ready, 'the three endpoints are restored and ready', { log: agent.log() });
  t.same(summary(await client.listEndpoints()), before, 'same IDs, identities and IPs after the restart');
  t.same(Object.values(pods).map((p) => endpointPrograms(p.ifIndex)), progs, 'restore re-attached nothing: the same program IDs at every hook', { endpoints: await endpointsDiag(client) });
  t.ok(await until(() => ping.replies() >= beforeRestart + 3, 10000), 'the ping still gets replies after the restart');

  const allowOther = policyFile(dir, 'server-allow-other-80', { ingress: [tcpFrom('other', 80)] });
  const after = await cli(socketPath, 'policy', 'import', '--wait', allowOther);
  t.equal(after.code, 0, `policy import after restart: ${after.err.trim()}`);
  t.ok(await connects(other, server, 80), 'after restart: the new policy lets other -> server:80 connect');
  t.notOk(await connects(other, server, 81), 'after restart: other -> server:81 is dropped');
  t.ok(await connects(cl, other, 80), 'after restart: traffic not selected by the policy flows');
});
