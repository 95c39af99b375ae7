// Privileged: podman (CNI backend) runs containers on the cellium network through the installed
// shim and the agent's hive: two containers ping each other, `podman rm -f` frees the endpoint and
// the IP. With the BPF datapath, a policy imported with the CLI blocks the ping and deleting it
// restores it.
import t, { type Test } from 'tap';
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { runCli } from '../../src/cli/main.js';
import type { CliIO } from '../../src/cli/context.js';
import { endpointHandlersCell, policyHandlersCell } from '../../src/cells/api-handlers/index.js';
import { EndpointManagerToken } from '../../src/cells/endpoint/index.js';
import { IPAMToken } from '../../src/cells/ipam/index.js';
import { agentCells } from '../../src/cells.js';
import { buildShim, startAgent, uniq, type Agent } from './agent.js';
import { skipUnlessBpf } from '../bpf/fixtures/topology.js';
import { needs } from '../needs.js';

const run = promisify(execFile);
const SETUP = join(import.meta.dirname, 'podman-setup.sh');

function skipReason(): string | false {
  const why = needs('root', 'runs podman containers');
  if (why) return why;
  if (!existsSync('/usr/bin/podman')) return 'needs podman (scripts/packages.d/30-e2e.txt; setup.sh installs it as root)';
  return false;
}

function cliIO(t: Test): CliIO & { out: string[] } {
  const out: string[] = [];
  return { out, stdout: (s) => out.push(s), stderr: (s) => t.comment(s.trim()), readFile: async (p) => (await import('node:fs/promises')).readFile(p, 'utf8'), env: {} };
}

async function cli(t: Test, agent: Agent, ...args: string[]): Promise<string> {
  const io = cliIO(t);
  const code = await runCli(['--socket-path', agent.socketPath, ...args], io);
  t.equal(code, 0, `cellium ${args.join(' ')}`);
  return io.out.join('');
}

async function podman(...args: string[]): Promise<string> {
  return (await run('podman', args, { encoding: 'utf8' })).stdout.trim();
}

async function ping(from: string, to: string): Promise<boolean> {
  try {
    await podman('exec', from, 'ping', '-c1', '-W2', to);
    return true;
  } catch {
    return false;
  }
}

/** Starts the agent, installs the CNI files for podman and runs two containers; all undone at the end. */
async function twoContainers(t: Test, pool: string, bpf: boolean) {
  buildShim();
  execFileSync('bash', [SETUP], { stdio: ['ignore', 'ignore', 'inherit'] });
  // Teardowns run in the order they are added: containers first (their DEL needs the shim and the
  // agent), then the CNI files, then the agent.
  const names = [`cel-a-${uniq()}`, `cel-b-${uniq()}`];
  t.teardown(() => run('podman', ['rm', '-f', '-t', '0', ...names]).catch(() => undefined));
  t.teardown(() => runCli(['install-cni', '--uninstall'], cliIO(t)));
  // The BPF case runs the whole agent (src/cells.ts); the other the control plane plus the handlers the CLI calls.
  const agent = bpf
    ? await startAgent(t, pool, { base: agentCells, config: { 'datapath-mode': 'bpf' } })
    : await startAgent(t, pool, { cells: [endpointHandlersCell, policyHandlersCell] });
  await cli(t, agent, 'install-cni');
  const info: Array<{ name: string; id: string; ip: string }> = [];
  for (const name of names) {
    await podman('run', '-d', '--name', name, '--network', 'cellium', '--cap-add', 'NET_RAW', 'localhost/bb', 'sleep', '600');
    const id = await podman('inspect', '-f', '{{.Id}}', name);
    const ip = await podman('inspect', '-f', '{{(index .NetworkSettings.Networks "cellium").IPAddress}}', name);
    info.push({ name, id, ip });
  }
  return { agent, a: info[0]!, b: info[1]! };
}

t.test('two podman containers on the cellium network ping each other; rm -f frees everything', { skip: skipReason() }, async (t) => {
  const { agent, a, b } = await twoContainers(t, '10.213.0.0/24', false);
  const manager = agent.h.get(EndpointManagerToken);
  const ipam = agent.h.get(IPAMToken);
  for (const c of [a, b]) {
    t.match(c.ip, /^10\.213\.0\.\d+$/, `${c.name} got an address from the pool`);
    const ep = manager.lookup(`container-id:${c.id}`);
    t.equal(ep?.state, 'ready', `${c.name} has a ready endpoint`);
    t.equal(ep?.ipv4, c.ip);
  }
  t.ok(await ping(a.name, b.ip), 'a pings b');
  t.ok(await ping(b.name, a.ip), 'b pings a');
  await podman('rm', '-f', '-t', '0', a.name);
  t.equal(manager.lookup(`container-id:${a.id}`), undefined, 'podman rm -f: endpoint gone');
  t.equal(ipam.ownerOf(a.ip), undefined, 'and its IP released');
  t.ok(manager.lookup(`container-id:${b.id}`), 'the other container keeps its endpoint');
  await podman('rm', '-f', '-t', '0', b.name);
  t.equal(manager.getEndpoints().length, 0, 'no endpoint left');
  t.same(ipam.status()[0]!.allocated, {}, 'no IP left');
});

t.test('a policy imported with the CLI blocks the ping; deleting it restores the ping', { skip: skipReason() || skipUnlessBpf() }, async (t) => {
  const { agent, a, b } = await twoContainers(t, '10.213.1.0/24', true);
  const manager = agent.h.get(EndpointManagerToken);
  const epA = manager.lookup(`container-id:${a.id}`)!;
  const epB = manager.lookup(`container-id:${b.id}`)!;
  await cli(t, agent, 'endpoint', 'labels', String(epA.id), '--add', 'k8s:app=server');
  await cli(t, agent, 'endpoint', 'labels', String(epB.id), '--add', 'k8s:app=client');
  t.ok(await ping(b.name, a.ip), 'no policy: b pings a');
  const file = join(agent.dir, 'deny-client.json');
  // A rules array, not a CiliumNetworkPolicy: podman passes no K8S_POD_NAMESPACE, so its endpoints
  // carry no namespace label, and a namespaced policy's selectors (namespace pinned) would not select them.
  writeFileSync(file, JSON.stringify([{
    endpointSelector: { matchLabels: { app: 'server' } },
    ingress: [{ fromEndpoints: [{ matchLabels: { app: 'nobody' } }] }],
    labels: ['k8s:policy=server-from-nobody'],
  }]));
  await cli(t, agent, 'policy', 'import', '--wait', file);
  t.notOk(await ping(b.name, a.ip), 'the policy blocks b -> a');
  // No a -> b check: the BPF datapath has no connection tracking (docs/datapath.md), so the echo
  // reply to a is judged by a's ingress policy and dropped too.
  await cli(t, agent, 'policy', 'delete', '--all');
  let back = false;
  for (let i = 0; i < 20 && !back; i++) back = await ping(b.name, a.ip);
  t.ok(back, 'deleting the policy restores b -> a');
});
