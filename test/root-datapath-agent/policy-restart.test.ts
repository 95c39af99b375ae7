// Privileged, BPF datapath (issue 11, "Fail closed"): the real `cellium-agent` process with
// --datapath-mode=bpf, three pods plumbed like the CNI plugin does (app=server, app=client,
// app=bad) and a policy in force on the server: the cluster may reach it, app=bad is denied
// explicitly. Both client pods ping the server continuously (every 50 ms) while the agent is killed
// with SIGKILL and started again. The denied pod gets 0 replies before, while the agent is down,
// while it restores and after (its echo requests keep being dropped by the deny: the drop counter
// keeps rising); the allowed pod's replies have no gap in their sequence numbers; `cellium policy
// get` prints the same rules and the same revision before and after. Issue 27: the same with an
// upgrade to the shared program — the agent killed runs per-endpoint programs, the restarted one
// --bpf-lxc-program=shared moves every endpoint to the one shared program (atomic link updates:
// still no gap), and a second restart keeps that program (the same ids at every hook).
import t, { type Test } from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readDropCounters } from '../../src/maps/index.js';
import { endpointPrograms } from '../../src/cells/datapath-bpf/lxc/index.js';
import {
  Cleanup, agentProcess, agentProcessSkip, allocatePod, cli, endpointRequest, endpointsDiag, startPing, until, type Ping,
} from './fixtures.js';

const POOL = '10.247.11.0/24';
/** How long traffic is watched in each phase (agent up, down, restored). */
const PHASE_MS = 3000;

/** Sequence numbers missing between the first and the last reply. */
function gaps(p: Ping): number[] {
  const seen = new Set(p.seqs());
  const seqs = [...seen].sort((a, b) => a - b);
  const missing: number[] = [];
  for (let s = seqs[0] ?? 0; s <= (seqs.at(-1) ?? -1); s++) if (!seen.has(s)) missing.push(s);
  return missing;
}

const deniedDrops = (root: string): number => readDropCounters(root)['policy-deny']?.packets ?? 0;

/** The program ids at both hooks of a pod's interface. */
function hookIds(ifIndex: number): number[] {
  const p = endpointPrograms(ifIndex);
  return [...p.from_container.tcx, ...(p.from_container.legacy ? [p.from_container.legacy] : []), ...p.to_container.tcx, ...(p.to_container.legacy ? [p.to_container.legacy] : [])];
}

type Program = 'per-endpoint' | 'shared';
const flag = (p: Program): string[] => [`--bpf-lxc-program=${p}`];

t.test('kill -9 and restart with a deny policy in force: the denied pod never gets a reply, the allowed pod loses nothing, the policy comes back', { skip: agentProcessSkip() }, async (t) => {
  await killAndRestart(t, ['per-endpoint', 'per-endpoint'], POOL);
});

t.test('upgrade to the shared program by kill -9 and restart, then a restart of the new version: nothing lost, the shared program kept', { skip: agentProcessSkip() }, async (t) => {
  await killAndRestart(t, ['per-endpoint', 'shared', 'shared'], '10.247.12.0/24');
});

/** Starts the agent with programs[0], kills it and restarts it with each next one, checking traffic throughout. */
async function killAndRestart(t: Test, programs: readonly Program[], pool: string): Promise<void> {
  const c = new Cleanup(t);
  const { root, dir, socketPath, client, start, up } = agentProcess(c, 'policy-restart', pool, ['--endpoint-regen-interval=2s']);

  let agent = start(flag(programs[0]!));
  t.ok(await up(agent), 'the agent serves the API', { log: agent.log() });
  const server = await allocatePod(c, client, 'server');
  const good = await allocatePod(c, client, 'good');
  const bad = await allocatePod(c, client, 'bad');
  await client.createEndpoint(0, endpointRequest(server, ['k8s:app=server']));
  await client.createEndpoint(0, endpointRequest(good, ['k8s:app=client']));
  await client.createEndpoint(0, endpointRequest(bad, ['k8s:app=bad']));

  const file = join(dir, 'server-policy.yaml');
  writeFileSync(file, [
    'apiVersion: cilium.io/v2', 'kind: CiliumNetworkPolicy', 'metadata: {name: server, namespace: default}', 'spec:',
    '  endpointSelector: {matchLabels: {app: server}}',
    '  ingress: [{fromEntities: [cluster]}]',
    '  ingressDeny: [{fromEndpoints: [{matchLabels: {app: bad}}]}]',
  ].join('\n'));
  const imported = await cli(socketPath, 'policy', 'import', '--wait', file);
  t.equal(imported.code, 0, `policy import: ${imported.err.trim()}`);
  const before = await cli(socketPath, 'policy', 'get');
  t.equal(before.code, 0);
  t.match(before.out, /Revision: \d+/);

  const allowed = startPing(c, good, server, 0.05);
  const denied = startPing(c, bad, server, 0.05);
  t.ok(await until(() => allowed.replies() >= 10, 10000), 'agent up: the allowed pod gets replies');
  await new Promise((r) => setTimeout(r, PHASE_MS));
  t.equal(denied.replies(), 0, 'agent up: the denied pod gets none');
  const dropsUp = deniedDrops(root);
  t.ok(dropsUp > 10, `agent up: its echo requests are dropped by the deny (${dropsUp})`);

  let dropsBefore = dropsUp;
  let shared: number[] | undefined;
  for (const program of programs.slice(1)) {
    agent.proc.kill('SIGKILL');
    await agent.exited;
    t.equal(agent.proc.signalCode, 'SIGKILL', 'the agent was killed with SIGKILL');
    const atKill = allowed.replies();
    await new Promise((r) => setTimeout(r, PHASE_MS));
    t.ok(allowed.replies() > atKill + 10, `agent down: the allowed pod keeps getting replies (${allowed.replies() - atKill})`);
    t.equal(denied.replies(), 0, 'agent down: the denied pod gets none');
    const dropsDown = deniedDrops(root);
    t.ok(dropsDown > dropsBefore + 10, `agent down: the deny keeps dropping (${dropsDown - dropsBefore} more)`);

    agent = start(flag(program));
    const atStart = allowed.replies();
    t.ok(await up(agent), `the restarted agent (--bpf-lxc-program=${program}) serves the API`, { log: agent.log() });
    const ready = await until(async () => {
      const eps = await client.listEndpoints().catch(() => []);
      return eps.length === 3 && eps.every((e) => e.status?.state === 'ready');
    }, 60000, 50);
    t.ok(ready, 'the three endpoints are restored and ready', { log: agent.log(), endpoints: await endpointsDiag(client).catch(() => []) });
    t.equal(denied.replies(), 0, 'restoring: the denied pod got none');
    // restored endpoints regenerate every 2 s and the maps are pruned every second: watch a few rounds
    await new Promise((r) => setTimeout(r, PHASE_MS));
    const after = await cli(socketPath, 'policy', 'get');
    t.equal(after.out, before.out, '`cellium policy get` prints the same rules and the same revision');
    t.ok(allowed.replies() > atStart + 10, `restored: the allowed pod keeps getting replies (${allowed.replies() - atStart})`);
    t.equal(denied.replies(), 0, 'restored: the denied pod gets none');
    dropsBefore = deniedDrops(root);
    t.ok(dropsBefore > dropsDown + 10, 'restored: the deny keeps dropping');
    t.match(agent.log(), /policy restored from the policy store/, 'the agent says it restored the policy');
    if (program === 'shared') {
      const ids = [server, good, bad].map((p) => hookIds(p.ifIndex));
      t.equal(new Set(ids.flat()).size, 2, 'every endpoint runs the same two programs (the shared ones)', { ids });
      t.ok(ids.every((i) => i.length === 2), 'one program per hook');
      if (shared) t.strictSame(ids[0], shared, 'a restart of the new version kept the shared program');
      shared = ids[0];
    }
  }

  t.ok(allowed.running() && denied.running(), 'both pings ran the whole time');
  await allowed.stop();
  await denied.stop();
  t.equal(denied.replies(), 0, 'the denied pod never got a reply');
  t.same(gaps(allowed), [], `the allowed pod lost no reply (${allowed.replies()} replies)`);
}
