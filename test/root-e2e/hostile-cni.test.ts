// Privileged: the hostile CNI table (test/cni-server/hostile-cases.ts) run through the real shim
// binary against the real `cellium-agent` process, and again straight at the agent's socket (the
// agent's own checks, for the values the shim already refuses). The agent runs inside a network
// namespace this test created, so "CNI_NETNS is the agent's own namespace" is tried without ever
// pointing at the machine's; if that check failed, only the test's namespace would be plumbed.
// Afterwards the agent is up and healthy, nothing leaked (no link in either namespace, no
// endpoint, no IP: the first valid ADD gets the pool's first address), and ADD/CHECK/DEL work.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { request } from 'node:http';
import { join } from 'node:path';
import { CniProtocolError, sendCniRequest } from '../../src/cni/protocol.js';
import { baseRequest, hostileCases, type HostileContext } from '../cni-server/hostile-cases.js';
import { tempDir } from '../cni-server/helpers.js';
import { runShim } from '../cni-shim/run-shim.js';
import { agentProcessSkip, startAgentProcess } from './agent-process.js';
import { buildShim, ipJson, netns, uniq } from './agent.js';

const POOL = '10.217.0.0/24';

/** GET on the agent's API socket: status and parsed body. */
function apiGet(socketPath: string, path: string): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, path, method: 'GET', timeout: 10_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString() || 'null') }));
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${path}: no answer`)));
    req.on('error', reject);
    req.end();
  });
}

/** The interface names of a namespace. */
function links(nsName: string): string[] {
  return ipJson<{ ifname: string }>('-n', nsName, 'link').map((l) => l.ifname).sort();
}

t.test('hostile CNI calls against an agent in its own network namespace', { skip: agentProcessSkip('runs the agent in a network namespace of its own') }, async (t) => {
  buildShim();
  const agentNs = netns(t, 'hc-agent');
  const pod = netns(t, 'hc-pod');
  const agent = await startAgentProcess(t, { pool: POOL, netnsName: agentNs.name });
  const { socketPath, netconf: conf } = agent;
  if (!t.ok(agent.up, agent.up ? 'the agent is up in its own namespace' : `the agent never became ready: ${agent.stderr()}`)) return;
  const dir = tempDir(t, 'hostile');
  t.same(links(agentNs.name), ['lo'], "the agent's namespace starts with lo only");

  const fifo = join(dir, 'fifo');
  execFileSync('mkfifo', [fifo]);
  const ctx: HostileContext = { pod: pod.path, own: agentNs.path, missing: `/var/run/netns/hc-none-${uniq()}`, fifo, dir: '/var/run/netns', netconf: conf };
  const cases = hostileCases(ctx);
  for (const c of cases) {
    const req = baseRequest(ctx, c.command, c.req);
    const env = { CNI_COMMAND: req.command, CNI_CONTAINERID: req.containerId, CNI_NETNS: req.netns, CNI_IFNAME: req.ifName, CNI_ARGS: req.args, CNI_PATH: req.path };
    const run = await runShim(env, req.stdin);
    const out = JSON.parse(run.stdout || '{}') as { code?: number; msg?: string };
    t.same([run.code, out.code], [1, c.code], `shim: ${c.name}: code ${c.code}`);
    t.match(out.msg, c.msg, `shim: ${c.name}: ${String(out.msg).slice(0, 140)}`);
    if (c.shimOnly) continue;
    // the same values straight at the agent: its checks do not rely on the shim's
    try {
      const resp = await sendCniRequest(socketPath, req, 30_000);
      const err = JSON.parse(resp.body || '{}') as { code?: number; msg?: string };
      t.same([resp.exitCode, err.code], [1, c.code], `agent: ${c.name}: code ${c.code}`);
      t.match(err.msg, c.msg, `agent: ${c.name}`);
    } catch (err) {
      t.ok(c.needsApiServer && err instanceof CniProtocolError, `agent: ${c.name}: ${(err as Error).message}`);
      t.same([(err as CniProtocolError).cniCode, (err as Error).message.match(c.msg) !== null], [c.code, true], `agent: ${c.name}: code ${c.code} and the message`);
    }
  }

  t.equal(agent.proc.exitCode, null, 'the agent is still running');
  const health = await apiGet(socketPath, '/v1/healthz');
  t.equal(health.status, 200, 'healthz answers');
  t.same(links(agentNs.name), ['lo'], "nothing created in the agent's namespace (no lxc, no pod side)");
  t.same(links(pod.name), ['lo'], 'nothing created in the pod');
  t.same((await apiGet(socketPath, '/v1/endpoint')).body, [], 'no endpoint');

  const env = { CNI_CONTAINERID: `hc-${uniq()}`, CNI_NETNS: pod.path, CNI_IFNAME: 'eth0', CNI_ARGS: 'IgnoreUnknown=1;K8S_POD_NAMESPACE=hostile;K8S_POD_NAME=web-0', CNI_PATH: '/opt/cni/bin' };
  const add = await runShim({ ...env, CNI_COMMAND: 'ADD' }, conf());
  t.equal(add.code, 0, `a valid ADD works afterwards: ${add.stdout}`);
  const res = JSON.parse(add.stdout) as { ips: Array<{ address: string }>; interfaces: Array<{ name: string }> };
  t.equal(res.ips[0]!.address, '10.217.0.2/32', 'the first address of the pool: no hostile call allocated one');
  t.same(links(agentNs.name), ['lo', res.interfaces[0]!.name].sort(), "the host side is in the agent's namespace");
  const check = await runShim({ ...env, CNI_COMMAND: 'CHECK' }, conf({ prevResult: res }));
  t.same([check.code, check.stdout], [0, ''], 'CHECK');
  const del = await runShim({ ...env, CNI_COMMAND: 'DEL' }, conf({ prevResult: res }));
  t.same([del.code, del.stdout], [0, ''], 'DEL');
  t.same([links(agentNs.name), links(pod.name)], [['lo'], ['lo']], 'both namespaces clean after DEL');
  agent.proc.kill('SIGTERM');
  t.equal(await agent.exited, 0, 'the agent stops cleanly');
});
