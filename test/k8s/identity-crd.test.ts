// Identities as CiliumIdentity objects against a real apiserver (--identity-allocation-mode=crd),
// each agent (its identity cells: statedir, k8s, k8s-identity, identity) with its own node name and
// state dir, authenticated with the ServiceAccount token deploy/rbac.yaml binds (a forbidden call
// fails). Two agents allocate the same 1,000 new label sets at once: every identity agrees and no
// label set has two CiliumIdentities. Released ones are deleted after the grace period by the one
// agent holding the Lease (its logs, and nobody else's, name each deletion); the held ones stay.
// The leader stopped, the other takes the Lease over and collects what only the stopped one held.
// The apiserver killed: a new label set fails after --identity-allocation-timeout naming the
// apiserver, held identities keep working, and allocation works again once it is back.
import t, { type Test } from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { Hive, invoke } from '../../src/hive/index.js';
import { statedirCell } from '../../src/cells/statedir/index.js';
import { identityCell, IdentityAllocatorToken, IdentityBackendToken, parseLabels, type IdentityAllocator } from '../../src/cells/identity/index.js';
import { ensureCrds, k8sCell, newK8sClient } from '../../src/cells/k8s/index.js';
import { CrdIdentityBackend, GC_LEASE_NAME, k8sIdentityCell, type CiliumIdentity, type Lease } from '../../src/cells/k8s-identity/index.js';
import { silentLogger } from '../../src/hive/index.js';
import { k8sSkip, startCluster, type Cluster } from './cluster.js';
import { agentKubeconfig, until } from './util.js';

const skip = k8sSkip();
const SETS = 1000;
const KEEP = 100;
const use = invoke('use-identity', (_a: IdentityAllocator) => undefined, IdentityAllocatorToken);

interface Agent {
  readonly node: string;
  readonly hive: Hive;
  readonly alloc: IdentityAllocator;
  readonly backend: CrdIdentityBackend;
  readonly logs: Record<string, unknown>[];
  stopped: boolean;
}

async function agent(t: Test, kubeconfig: string, dir: string, node: string): Promise<Agent> {
  const logs: Record<string, unknown>[] = [];
  const logger = pino({ level: 'info' }, { write: (s: string) => void logs.push(JSON.parse(s) as Record<string, unknown>) });
  const hive = new Hive([statedirCell, k8sCell, k8sIdentityCell, identityCell, use], { name: node, logger });
  hive.configure({
    values: {
      'state-dir': join(dir, node), 'k8s-kubeconfig-path': kubeconfig, 'k8s-node-name': node,
      'identity-gc-interval': '1s', 'identity-heartbeat-timeout': '3s', 'identity-gc-lease-duration': '3s', 'identity-allocation-timeout': '3s',
    },
  });
  hive.populate();
  await hive.start();
  const a: Agent = { node, hive, alloc: hive.get(IdentityAllocatorToken), backend: hive.get(IdentityBackendToken) as CrdIdentityBackend, logs, stopped: false };
  t.teardown(() => (a.stopped ? undefined : hive.stop()));
  return a;
}

/** The test's CiliumIdentities (app=crdNNN), by name. */
async function objects(c: Cluster): Promise<CiliumIdentity[]> {
  const list = await c.kubectlJson<{ items: CiliumIdentity[] }>(['get', 'ciliumidentities']);
  return list.items.filter((o) => /^crd\d+$/.test(o['security-labels']?.['k8s:app'] ?? ''));
}

async function holder(c: Cluster): Promise<string | undefined> {
  const r = await c.kubectl(['-n', 'kube-system', 'get', 'lease', GC_LEASE_NAME, '-o', 'json']);
  return r.code === 0 ? (JSON.parse(r.stdout) as Lease).spec?.holderIdentity : undefined;
}

const set = (n: number) => parseLabels([`k8s:app=crd${n}`, `k8s:tier=t${n % 7}`, 'k8s:io.kubernetes.pod.namespace=default']);

async function allocateAll(a: Agent, order: readonly number[]): Promise<Map<number, number>> {
  const got = new Map<number, number>();
  const queue = [...order];
  await Promise.all(Array.from({ length: 32 }, async () => {
    for (let n = queue.shift(); n !== undefined; n = queue.shift()) got.set(n, (await a.alloc.allocate(set(n))).identity.id);
  }));
  return got;
}

const deletions = (a: Agent) => a.logs.filter((l) => l.msg === 'identity GC: unused identity deleted');

t.test('CiliumIdentities: two agents, 1,000 label sets at once, one identity each; GC by the Lease holder only; fail closed without the apiserver', { skip }, async (t) => {
  const c = await startCluster(t);
  const dir = mkdtempSync(join(tmpdir(), 'cellium-crdid-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const kubeconfig = await agentKubeconfig(c, dir);
  // the agent registers the CRDs at start (the k8s-resources cell); here its registration alone, as the agent
  await ensureCrds(newK8sClient({ k8sKubeconfigPath: kubeconfig, k8sApiServer: '' }, {}), silentLogger());

  const a = await agent(t, kubeconfig, dir, 'node-a');
  const b = await agent(t, kubeconfig, dir, 'node-b');
  const all = Array.from({ length: SETS }, (_, i) => i);
  const started = Date.now();
  const [ga, gb] = await Promise.all([allocateAll(a, all), allocateAll(b, [...all].reverse())]);
  const secs = (Date.now() - started) / 1000;
  t.comment(`${2 * SETS} allocations of ${SETS} new label sets by 2 agents in ${secs.toFixed(1)} s; 409s: ${a.backend.stats.taken + b.backend.stats.taken}, created: ${a.backend.stats.created + b.backend.stats.created}, duplicates seen: ${a.backend.stats.duplicates + b.backend.stats.duplicates}`);

  let disagree = 0;
  for (const n of all) if (ga.get(n) !== gb.get(n)) disagree++;
  t.equal(disagree, 0, 'both agents got the same number for every label set');
  const objs = await objects(c);
  const byLabels = new Map<string, string[]>();
  for (const o of objs) byLabels.set(JSON.stringify(o['security-labels']), [...(byLabels.get(JSON.stringify(o['security-labels'])) ?? []), o.metadata.name]);
  t.equal(objs.length, SETS, 'one CiliumIdentity per label set');
  t.same([...byLabels.values()].filter((v) => v.length > 1), [], 'no label set has two');
  const byName = new Map(objs.map((o) => [Number(o.metadata.name), o]));
  let wrong = 0;
  for (const n of all) if (byName.get(ga.get(n)!)?.['security-labels']?.['k8s:app'] !== `crd${n}`) wrong++;
  t.equal(wrong, 0, 'every number names its label set in the apiserver');
  t.same(byName.get(ga.get(5)!)?.metadata.labels, { app: 'crd5', tier: 't5', 'io.kubernetes.pod.namespace': 'default' }, 'metadata.labels: the k8s labels');
  t.equal(a.backend.stats.created + b.backend.stats.created, SETS, 'created once each');
  t.equal(a.backend.stats.duplicates + b.backend.stats.duplicates, 0, 'no duplicate was ever seen');
  // each agent knows the other's identities from the watch
  await until('a to know every identity', () => all.every((n) => a.alloc.lookupByLabels(set(n))?.id === ga.get(n)), 30_000);

  // GC: b releases everything, a keeps the first KEEP sets
  for (const n of all) await b.alloc.release(gb.get(n)!);
  for (const n of all.slice(KEEP)) await a.alloc.release(ga.get(n)!);
  const leader = await until('a Lease holder', () => holder(c), 30_000);
  t.ok(leader === 'node-a' || leader === 'node-b', `the Lease is held by ${leader}`);
  const [L, F] = leader === 'node-a' ? [a, b] : [b, a];
  await until('the released identities to be collected', async () => (await objects(c)).length === KEEP, 120_000);
  const kept = await objects(c);
  t.same(kept.map((o) => o.metadata.name).sort(), all.slice(0, KEEP).map((n) => String(ga.get(n))).sort(), 'the held ones stay');
  t.equal(deletions(L).length, SETS - KEEP, `the leader ${L.node} logged each deletion`);
  t.equal(deletions(F).length, 0, `the follower ${F.node} deleted nothing`);
  t.equal(await holder(c), L.node, 'the Lease did not move');
  await new Promise((r) => setTimeout(r, 4000)); // longer than the grace period: the held ones are still there
  t.equal((await objects(c)).length, KEEP, 'held identities survive past the grace period (their holder removes the GC\'s mark)');
  t.ok(L.logs.some((l) => l.msg === 'identity GC: became the leader (holds the Lease)'), 'the leader logged its election');

  // the leader stops (gives the Lease up): the other takes over and collects what only the stopped one held
  await L.hive.stop();
  L.stopped = true;
  await until('the other agent to take the Lease over', async () => (await holder(c)) === F.node, 30_000);
  if (F === a) for (const n of all.slice(0, KEEP)) await a.alloc.release(ga.get(n)!);
  await until('every test identity to be collected', async () => (await objects(c)).length === 0, 120_000);
  t.equal(deletions(F).length, KEEP, `the new leader ${F.node} collected the rest`);

  // fail closed: the apiserver down
  const held = (await F.alloc.allocate(set(5000))).identity.id;
  const restart = await c.killApiserver();
  const t0 = Date.now();
  await t.rejects(F.alloc.allocate(set(5001)), /no identity for labels "k8s:app=crd5001;.*" within 3000 ms \(--identity-allocation-timeout\): the apiserver did not answer.*nothing was allocated: check the apiserver/, 'a new label set fails naming the apiserver');
  t.ok(Date.now() - t0 >= 2900, 'after the time limit');
  t.equal((await F.alloc.allocate(set(5000))).identity.id, held, 'a held identity keeps working');
  await restart();
  const after = await until('allocation to work again', async () => F.alloc.allocate(set(5001)).then((r) => r.identity.id, () => undefined), 60_000);
  t.ok(after >= 256);
  t.equal((await objects(c)).filter((o) => o['security-labels']?.['k8s:app'] === 'crd5001').length, 1, 'exactly one CiliumIdentity for it, made after the apiserver came back');
});
