// Privileged, BPF datapath (issue 11, fail closed): the real `cellium-agent` process, three pods
// (app=server admitting only app=client, app=client, app=bad) and the bad pod pinging the server
// all along. The agent is killed with SIGKILL and a piece of its state directory is lost before it
// starts again; the denied pod must never get a reply:
// - policies.json removed: the agent does not start (exit 1) and names the file, the endpoints and
//   the way out; the pinned programs keep enforcing;
// - the server endpoint's directory removed: the agent starts without it and deletes the interface
//   its programs guarded (its pod is cut off, not left running with no program at all).
import t, { type Test } from 'tap';
import { existsSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Cleanup, agentProcess, agentProcessSkip, allocatePod, cli, endpointRequest, endpointsDiag, startPing, until, type Pod } from './fixtures.js';

const POOL = '10.139.2.0/24';

/** Agent, pods, policy and pings as described above; the agent killed with SIGKILL; where its state is. */
async function setup(t: Test, name: string) {
  const c = new Cleanup(t);
  const ap = agentProcess(c, name, POOL, ['--endpoint-regen-interval=2s']);
  const agent = ap.start();
  t.ok(await ap.up(agent), 'the agent serves the API', { log: agent.log() });
  const pods: Record<'server' | 'client' | 'bad', Pod> = {
    server: await allocatePod(c, ap.client, 'server'),
    client: await allocatePod(c, ap.client, 'client'),
    bad: await allocatePod(c, ap.client, 'bad'),
  };
  for (const n of ['server', 'client', 'bad'] as const) await ap.client.createEndpoint(0, endpointRequest(pods[n], [`k8s:app=${n}`]));
  const file = join(ap.dir, 'server.yaml');
  writeFileSync(file, ['apiVersion: cilium.io/v2', 'kind: CiliumNetworkPolicy', 'metadata: {name: server, namespace: default}', 'spec:',
    '  endpointSelector: {matchLabels: {app: server}}', '  ingress: [{fromEndpoints: [{matchLabels: {app: client}}]}]'].join('\n'));
  const r = await cli(ap.socketPath, 'policy', 'import', '--wait', file);
  t.equal(r.code, 0, `policy import: ${r.err.trim()}`, r.code ? { endpoints: await endpointsDiag(ap.client) } : {});
  const allowed = startPing(c, pods.client, pods.server, 0.1);
  const denied = startPing(c, pods.bad, pods.server, 0.1);
  t.ok(await until(() => allowed.replies() >= 5, 10000), 'the client gets replies');
  t.equal(denied.replies(), 0, 'the bad pod gets none');
  agent.proc.kill('SIGKILL');
  await agent.exited;
  const state = join(ap.dir, 'state');
  const serverDir = readdirSync(state).filter((n) => /^\d+$/.test(n)).find((n) => readFileSync(join(state, n, 'ep_config.json'), 'utf8').includes('k8s:app=server'))!;
  return { ap, pods, allowed, denied, state, serverDir };
}

t.test('policies.json lost while the agent was down: it does not start, and says which file and what to do', { skip: agentProcessSkip() }, async (t) => {
  const { ap, denied, state } = await setup(t, 'lost-policies');
  const file = join(state, 'policies.json');
  rmSync(file);
  const agent = ap.start();
  await agent.exited;
  t.equal(agent.proc.exitCode, 1, 'the agent exits with 1');
  t.match(agent.log(), `the policy store ${file} is missing, but stored endpoints`, 'it names the file', { log: agent.log() });
  t.match(agent.log(), 'fix: restore', 'and the way out');
  await new Promise((r) => setTimeout(r, 1500));
  await denied.stop();
  t.equal(denied.replies(), 0, 'the bad pod never got a reply: the pinned programs kept enforcing');
});

t.test("an endpoint's state directory lost while the agent was down: its interface is deleted, not left unenforced", { skip: agentProcessSkip() }, async (t) => {
  const { ap, pods, denied, state, serverDir } = await setup(t, 'lost-endpoint');
  rmSync(join(state, serverDir), { recursive: true });
  const agent = ap.start();
  t.ok(await ap.up(agent), 'the agent starts without the server endpoint', { log: agent.log() });
  t.ok(await until(() => !existsSync(`/sys/class/net/${pods.server.hostIf}`), 10000), `the server's interface ${pods.server.hostIf} is deleted`, { log: agent.log() });
  t.match(agent.log(), `"endpointID":${serverDir},"ifName":"${pods.server.hostIf}","msg":"restore: deleted the interface of an endpoint that was not restored`, 'with a log line naming the endpoint and interface');
  await new Promise((r) => setTimeout(r, 1500));
  await denied.stop();
  t.equal(denied.replies(), 0, 'the bad pod never got a reply');
  t.same((await ap.client.listEndpoints()).map((e) => e.status.labels?.['security-relevant']?.[0]).sort(), ['k8s:app=bad', 'k8s:app=client'], 'the other endpoints are restored');
});
