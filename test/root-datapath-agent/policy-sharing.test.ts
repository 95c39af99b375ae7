// Privileged, BPF datapath, --bpf-lxc-program=shared (issue 27: endpoints with the same policy
// share one policy map): the real `cellium-agent` process and five pods plumbed like the CNI plugin
// does. Two servers (app=server, each with a label of its own, so two identities) under the same
// rules share ONE policy map: their slots in cellium_policy_maps and their cellium_policy_<id> pins
// name the same map. A rule selecting only the second server moves it to a map of its own: the
// first keeps its map, a peer the move allows reaches the second server only, and the denied pod's
// continuous ping gets no reply at any moment (nor does the client's allowed ping lose one).
// kill -9 and restart: the same slots, the same maps, the same verdicts. Deleting the endpoints
// frees the maps (the kernel no longer has them).
import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadAddon } from '../../src/bpf/native.js';
import { BpfMap } from '../../src/bpf/index.js';
import { PolicyMapsMap, policyMapPath } from '../../src/maps/index.js';
import {
  Cleanup, agentProcess, agentProcessSkip, allocatePod, cli, connects, endpointRequest, endpointsDiag, startPing, until, type Ping,
} from './fixtures.js';

const POOL = '10.247.21.0/24';

/** The map id in each endpoint's slot, and the one its cellium_policy_<id> pins. */
function maps(root: string, ids: readonly number[]): { slots: (number | undefined)[]; pins: number[] } {
  const slots = PolicyMapsMap.open(root);
  try {
    const pins = ids.map((id) => {
      const m = BpfMap.openPinned(policyMapPath(root, id));
      try {
        return m.info.id;
      } finally {
        m.close();
      }
    });
    return { slots: ids.map((id) => slots.get(id)), pins };
  } finally {
    slots.close();
  }
}

/** Whether the kernel still has map `id`. */
function mapExists(id: number): boolean {
  const a = loadAddon();
  try {
    a.close(a.mapGetFdById(id));
    return true;
  } catch {
    return false;
  }
}

/** icmp_seq numbers missing between a ping's first and last reply. */
function gaps(p: Ping): number[] {
  const seen = new Set(p.seqs());
  const seqs = [...seen].sort((a, b) => a - b);
  const missing: number[] = [];
  for (let s = seqs[0] ?? 0; s <= (seqs.at(-1) ?? -1); s++) if (!seen.has(s)) missing.push(s);
  return missing;
}

/** A CiliumNetworkPolicy file; returns its path. */
function cnp(dir: string, name: string, spec: Record<string, unknown>): string {
  const file = join(dir, `${name}.json`);
  writeFileSync(file, JSON.stringify({ apiVersion: 'cilium.io/v2', kind: 'CiliumNetworkPolicy', metadata: { name, namespace: 'default' }, spec }));
  return file;
}

t.test('two servers share one policy map; one moves by a rule of its own, restart keeps both, delete frees them', { skip: agentProcessSkip() }, async (t) => {
  const c = new Cleanup(t);
  const { root, dir, socketPath, client, start, up } = agentProcess(c, 'policy-sharing', POOL, ['--bpf-lxc-program=shared']);
  let agent = start();
  t.ok(await up(agent), 'the agent serves the API', { log: agent.log() });
  const pods = {
    s1: await allocatePod(c, client, 's1'), s2: await allocatePod(c, client, 's2'),
    client: await allocatePod(c, client, 'client'), bad: await allocatePod(c, client, 'bad'), other: await allocatePod(c, client, 'other'),
  };
  const s1 = await client.createEndpoint(0, endpointRequest(pods.s1, ['k8s:app=server', 'k8s:pod=s1']));
  const s2 = await client.createEndpoint(0, endpointRequest(pods.s2, ['k8s:app=server', 'k8s:pod=s2']));
  await client.createEndpoint(0, endpointRequest(pods.client, ['k8s:app=client']));
  await client.createEndpoint(0, endpointRequest(pods.bad, ['k8s:app=bad']));
  await client.createEndpoint(0, endpointRequest(pods.other, ['k8s:app=other']));
  t.not(s1.status?.identity?.id, s2.status?.identity?.id, 'the servers have two identities');

  const servers = cnp(dir, 'servers', {
    endpointSelector: { matchLabels: { app: 'server' } },
    ingress: [{ fromEndpoints: [{ matchLabels: { app: 'client' } }] }],
    ingressDeny: [{ fromEndpoints: [{ matchLabels: { app: 'bad' } }] }],
  });
  const imported = await cli(socketPath, 'policy', 'import', '--wait', servers);
  t.equal(imported.code, 0, `policy import: ${imported.err.trim()}`);
  const shared = maps(root, [s1.id, s2.id]);
  t.equal(shared.slots[0], shared.slots[1], 'both servers\' slots point at one map', shared);
  t.strictSame(shared.pins, shared.slots, 'and both cellium_policy_<id> pin it');
  t.ok(await connects(pods.client, pods.s1, 80) && await connects(pods.client, pods.s2, 80), 'the client reaches both servers');
  t.notOk(await connects(pods.other, pods.s2, 80), 'other does not reach s2');

  const allowed = startPing(c, pods.client, pods.s1, 0.05);
  const denied = startPing(c, pods.bad, pods.s2, 0.05);
  t.ok(await until(() => allowed.replies() >= 10, 10000), 'the client\'s ping to s1 gets replies');

  // a rule of s2's own: s2 moves to a map of its own, s1 keeps the shared one
  const own = cnp(dir, 's2-other', { endpointSelector: { matchLabels: { pod: 's2' } }, ingress: [{ fromEndpoints: [{ matchLabels: { app: 'other' } }] }] });
  const moved = await cli(socketPath, 'policy', 'import', '--wait', own);
  t.equal(moved.code, 0, `policy import: ${moved.err.trim()}`);
  const after = maps(root, [s1.id, s2.id]);
  t.equal(after.slots[0], shared.slots[0], 's1 keeps the shared map');
  t.not(after.slots[1], shared.slots[0], 's2 moved to another map');
  t.strictSame(after.pins, after.slots, 'each cellium_policy_<id> pins its endpoint\'s map');
  t.ok(await connects(pods.other, pods.s2, 80), 'other reaches s2 now');
  t.notOk(await connects(pods.other, pods.s1, 80), 'and still not s1 (s2\'s move widened nothing else)');
  t.ok(await connects(pods.client, pods.s2, 80), 'the client still reaches s2');
  t.equal(denied.replies(), 0, 'the denied pod got no reply from s2 before, during or after the move');

  agent.proc.kill('SIGKILL');
  await agent.exited;
  const atKill = allowed.replies();
  t.ok(await until(() => allowed.replies() >= atKill + 10, 10000), 'agent down: the allowed ping goes on');
  agent = start();
  t.ok(await up(agent), 'the restarted agent serves the API', { log: agent.log() });
  const ready = await until(async () => {
    const eps = await client.listEndpoints().catch(() => []);
    return eps.length === 5 && eps.every((e) => e.status?.state === 'ready');
  }, 60000, 50);
  t.ok(ready, 'the five endpoints are restored and ready', { log: agent.log(), endpoints: await endpointsDiag(client).catch(() => []) });
  await new Promise((r) => setTimeout(r, 2000)); // restored endpoints regenerate and the maps are pruned every second
  t.strictSame(maps(root, [s1.id, s2.id]), after, 'restart: the same slots and pins, the same maps');
  t.ok(await connects(pods.other, pods.s2, 80) && !(await connects(pods.other, pods.s1, 80)), 'restart: the same verdicts');
  t.equal(denied.replies(), 0, 'the denied pod never got a reply');
  await allowed.stop();
  await denied.stop();
  t.same(gaps(allowed), [], `the client's allowed ping lost no reply (${allowed.replies()} replies)`);

  await client.deleteEndpoint(s2.id);
  t.ok(await until(() => !mapExists(after.slots[1]!), 10000), 's2 deleted: the map only it used is gone from the kernel');
  t.ok(mapExists(shared.slots[0]!), 'the shared map stays for s1');
  t.ok(await connects(pods.client, pods.s1, 80), 's1 is unaffected');
  await client.deleteEndpoint(s1.id);
  t.ok(await until(() => !mapExists(shared.slots[0]!), 10000), 's1 deleted too: the shared map is gone');
});
