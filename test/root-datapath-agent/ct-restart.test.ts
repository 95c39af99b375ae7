// Privileged, BPF datapath (issue 13, restart): the real `cellium-agent` process with two pods,
// each default-deny in both directions except client -> server:80/TCP, so the server's answers
// only pass as conntrack replies. A long-lived TCP stream (a line every 50 ms, echoed back) runs
// while the agent is killed with SIGKILL and started again: it never resets and its echoes keep
// coming the whole time; the conntrack maps are the same pinned maps before and after (kept, not
// recreated), and the restarted agent re-attaches nothing.
import t from 'tap';
import { join } from 'node:path';
import { CtMaps } from '../../src/maps/index.js';
import { endpointPrograms } from '../../src/cells/datapath-bpf/lxc/index.js';
import { CelliumClient } from '../../src/api/client.js';
import { SMALL_CT, Stream, appPolicy, peerPorts, serve } from './ct-fixtures.js';
import { Cleanup, agentProcessSkip, allocatePod, bpfRoot, cli, endpointRequest, endpointsDiag, spawnAgent, tempDir, until } from './fixtures.js';

const POOL = '10.243.2.0/24';

function mapIds(root: string): number[] {
  const ct = CtMaps.openPinned(root);
  try {
    return ct.ids();
  } finally {
    ct.close();
  }
}

t.test('an established TCP stream survives kill -9 and restart of the agent', { skip: agentProcessSkip() }, async (t) => {
  const c = new Cleanup(t);
  const root = bpfRoot(c);
  const dir = tempDir(c, 'ct-restart');
  const socketPath = join(dir, 'cellium.sock');
  const args = [
    `--socket-path=${socketPath}`, `--state-dir=${join(dir, 'state')}`, `--cni-delete-queue-dir=${join(dir, 'q')}`, `--bpf-root=${root}`,
    `--ipv4-range=${POOL}`, '--datapath-mode=bpf', '--bpf-lb-sock=false', ...Object.entries(SMALL_CT).map(([k, v]) => `--${k}=${v}`),
  ];
  const client = new CelliumClient({ socketPath });
  c.teardown(() => client.close());
  const up = async (a: ReturnType<typeof spawnAgent>): Promise<boolean> =>
    until(async () => a.proc.exitCode === null && (await client.listEndpoints().then(() => true, () => false)), 60000, 200);

  let agent = spawnAgent(c, args);
  t.ok(await up(agent), 'the agent serves the API', { log: agent.log() });
  const cl = await allocatePod(c, client, 'client');
  const server = await allocatePod(c, client, 'server');
  await client.createEndpoint(0, endpointRequest(cl, ['k8s:app=client']));
  await client.createEndpoint(0, endpointRequest(server, ['k8s:app=server']));
  for (const file of [
    appPolicy(dir, 'server', 'server', { ingress: [peerPorts('fromEndpoints', 'client', ['80/TCP'])], egress: [{}] }),
    appPolicy(dir, 'client', 'client', { egress: [peerPorts('toEndpoints', 'server', ['80/TCP'])], ingress: [{}] }),
  ]) {
    const r = await cli(socketPath, 'policy', 'import', '--wait', file);
    t.equal(r.code, 0, `policy import: ${r.err.trim()}`);
  }
  await serve(c, server, 'tcpecho', 80);
  const stream = await Stream.open(c, cl, server, 80);
  t.ok(await until(async () => (await stream.echoes()) >= 10, 10000), 'the stream is flowing (echoes are conntrack replies)');
  const ids = mapIds(root);
  const progs = [cl, server].map((p) => endpointPrograms(p.ifIndex));

  agent.proc.kill('SIGKILL');
  await agent.exited;
  t.equal(agent.proc.signalCode, 'SIGKILL', 'the agent was killed with SIGKILL');
  const atKill = await stream.echoes();
  t.ok(await until(async () => (await stream.echoes()) >= atKill + 20, 10000), 'agent down: echoes keep coming');

  agent = spawnAgent(c, args);
  t.ok(await up(agent), 'the restarted agent serves the API', { log: agent.log() });
  const ready = await until(async () => {
    const eps = await client.listEndpoints().catch(() => []);
    return eps.length === 2 && eps.every((e) => e.status?.state === 'ready');
  }, 60000, 200);
  t.ok(ready, 'both endpoints are restored and ready', { log: agent.log() });
  const atRestart = await stream.echoes();
  t.ok(await until(async () => (await stream.echoes()) >= atRestart + 40, 10000), 'agent back: echoes keep coming', { endpoints: await endpointsDiag(client) });
  t.equal(stream.broken(), undefined, 'the stream never reset');
  t.same(mapIds(root), ids, 'the same pinned conntrack maps (kept across the restart)');
  t.same([cl, server].map((p) => endpointPrograms(p.ifIndex)), progs, 'restore re-attached nothing');
  t.notMatch(agent.log(), /another layout/, 'no map was recreated');
});
