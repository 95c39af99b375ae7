// Privileged, the whole agent as a process (bin/cellium-agent.js, BPF datapath): three backend pods
// and a client pod plumbed like the CNI plugin does, a ClusterIP imported with `cellium service
// import` from a Service + EndpointSlice manifest. 300 connections spread over the three backends;
// an established stream through the VIP keeps flowing while the agent is killed with SIGKILL and
// after it is restarted; the restarted agent lists the same services with the same IDs, and new
// connections through the VIP still reach the backends.
import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  Cleanup, agentProcess, agentProcessSkip, allocatePod, cli, endpointRequest, until, type Pod,
} from '../root-datapath-agent/fixtures.js';

const POOL = '10.177.0.0/24';
const VIP = '10.177.96.10';

function manifest(backends: readonly Pod[]): string {
  const svc = {
    apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: 'shop' },
    spec: { clusterIP: VIP, ports: [{ name: 'http', port: 80, targetPort: 'http' }, { name: 'echo', port: 7, targetPort: 'echo' }] },
  };
  const slice = {
    apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice',
    metadata: { name: 'web-1', namespace: 'shop', labels: { 'kubernetes.io/service-name': 'web' } },
    addressType: 'IPv4',
    ports: [{ name: 'http', port: 8080, protocol: 'TCP' }, { name: 'echo', port: 7007, protocol: 'TCP' }],
    endpoints: backends.map((b) => ({ addresses: [b.ip], conditions: { ready: true } })),
  };
  return `${JSON.stringify(svc)}\n---\n${JSON.stringify(slice)}\n`;
}

async function listen(pod: Pod, proto: string, port: number): Promise<string> {
  const id = pod.traffic.nextId();
  pod.traffic.command(`listen ${proto} ${pod.ip} ${port} ${id}`);
  if (!(await pod.traffic.waitFor('ready', id, 10000))) throw new Error(`${pod.name} did not listen on ${port}`);
  return id;
}

async function connect(from: Pod, port: number): Promise<boolean> {
  const id = from.traffic.nextId();
  from.traffic.command(`connect ${VIP} ${port} - 1500 ${id}`);
  return (await from.traffic.waitFor(['connected', 'failed'], id, 6000)) === 'connected';
}

const hits = (pod: Pod, id: string): number => pod.traffic.output.split('\n').filter((l) => l === `got ${id}`).length;

t.test('services across kill -9 and restart of the agent: spread, established flows, the same service list', { skip: agentProcessSkip() }, async (t) => {
  const c = new Cleanup(t);
  const { dir, socketPath, client: api, start, up } = agentProcess(c, 'lb-restart', POOL);
  let agent = start();
  t.ok(await up(agent), 'the agent serves the API', { log: agent.log() });
  const client = await allocatePod(c, api, 'client');
  const backends = [await allocatePod(c, api, 'web-0'), await allocatePod(c, api, 'web-1'), await allocatePod(c, api, 'web-2')];
  await api.createEndpoint(0, endpointRequest(client, ['k8s:app=client']));
  for (const b of backends) await api.createEndpoint(0, endpointRequest(b, ['k8s:app=web']));
  const http = await Promise.all(backends.map((b) => listen(b, 'tcp', 8080)));
  await Promise.all(backends.map((b) => listen(b, 'tcpecho', 7007)));

  const file = join(dir, 'web.yaml');
  writeFileSync(file, manifest(backends));
  const imported = await cli(socketPath, 'service', 'import', file);
  t.equal(imported.code, 0, `cellium service import: ${imported.out.trim()} ${imported.err.trim()}`);
  t.ok(await until(async () => (await api.listServices()).every((s) => s.status?.['cellium-state']?.state === 'done'), 10000), 'every frontend is done in the kernel maps');
  const before = (await api.listServices()).map((s) => ({ id: s.spec?.id, frontend: s.spec?.['frontend-address'], backends: s.spec?.['backend-addresses']?.length })).sort((a, b) => (a.id ?? 0) - (b.id ?? 0));
  t.equal(before.length, 2, 'two frontends: :80 and :7');

  const N = 300;
  let ok = 0;
  for (let i = 0; i < N; i++) if (await connect(client, 80)) ok++;
  t.equal(ok, N, `${N} connections through ${VIP}:80`);
  const total = (): number => http.reduce((a, id, i) => a + hits(backends[i]!, id), 0);
  await until(() => total() >= N, 3000, 50); // the servers' lines can trail the clients'
  for (const [i, b] of backends.entries()) {
    const n = hits(b, http[i]!);
    t.ok(n >= 0.15 * N, `${b.name} served ${n} of ${N} (>= 15%)`);
  }

  const sid = client.traffic.nextId();
  client.traffic.command(`stream ${VIP} 7 - ${sid}`);
  t.ok(await client.traffic.waitFor('streaming', sid, 5000), 'a stream through the VIP');
  const echoes = async (): Promise<number> => {
    const from = client.traffic.output.length;
    client.traffic.command(`report ${sid}`);
    const line = new RegExp(`echoes ${sid} (-?\\d+)\\n`);
    await until(() => line.test(client.traffic.output.slice(from)), 3000, 20);
    return Number(line.exec(client.traffic.output.slice(from))?.[1] ?? -1);
  };
  const atStart = await echoes();
  t.ok(await until(async () => (await echoes()) > atStart + 3, 5000), 'the stream echoes');

  agent.proc.kill('SIGKILL');
  await agent.exited;
  const atKill = await echoes();
  t.ok(await until(async () => (await echoes()) > atKill + 10, 5000), 'agent down: the stream through the VIP keeps flowing');
  t.ok(await connect(client, 80), 'agent down: a new connection through the VIP');

  agent = start();
  t.ok(await up(agent), 'the restarted agent serves the API', { log: agent.log() });
  t.ok(await until(async () => (await api.listServices()).every((s) => s.status?.['cellium-state']?.state === 'done'), 10000), 'restored frontends are done');
  const after = (await api.listServices()).map((s) => ({ id: s.spec?.id, frontend: s.spec?.['frontend-address'], backends: s.spec?.['backend-addresses']?.length })).sort((a, b) => (a.id ?? 0) - (b.id ?? 0));
  t.same(after, before, 'the same services, IDs, frontends and backends after the restart');
  const atRestart = await echoes();
  t.ok(await until(async () => (await echoes()) > atRestart + 10, 5000), 'agent back: the stream still flows');
  t.notMatch(client.traffic.output, new RegExp(`reset ${sid} `), 'the stream was never reset');
  let again = 0;
  for (let i = 0; i < 30; i++) if (await connect(client, 80)) again++;
  t.equal(again, 30, 'new connections through the VIP after the restart');
  client.traffic.command(`stop ${sid}`);
});
