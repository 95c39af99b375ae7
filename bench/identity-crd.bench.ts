/**
 * Identities as CiliumIdentity objects (--identity-allocation-mode=crd) on a real apiserver (the
 * harness of docs/k8s-harness.md; skipped with one line when its binaries are not built): 10,000
 * identity allocations at once across three agents (identity cells: statedir, k8s, k8s-identity,
 * identity; 32 at a time each), 5,000 new label sets each wanted by two agents. Reported: the
 * time, the rate, the 409s (a number another agent created first: read and taken, or the next one
 * offered), conflicts (label sets with two CiliumIdentities, agents disagreeing; goal 0). Baselines
 * in the same run: the same allocations on the embedded (file) backend, one agent, and on etcd
 * (--identity-allocation-mode=kvstore, three agents) when an etcd binary is here.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { identityCell, IdentityAllocatorToken, IdentityBackendToken, parseLabels, type IdentityAllocator } from '../src/cells/identity/index.js';
import { apiListWatcher, ensureCrds, k8sCell, newK8sClient } from '../src/cells/k8s/index.js';
import { k8sIdentityCell, labelsOf, type CiliumIdentity, type CrdIdentityBackend } from '../src/cells/k8s-identity/index.js';
import { kvstoreCell } from '../src/cells/kvstore/index.js';
import { statedirCell } from '../src/cells/statedir/index.js';
import { Hive, invoke, silentLogger, type Cell } from '../src/hive/index.js';
import { etcdSkip, launchEtcd } from './lib/etcd.js';
import { printTable } from './lib/report.js';

const SETS = 5000;
const AGENTS = ['a', 'b', 'c'];
const K8S_SCRIPT = join(process.cwd(), 'scripts', 'k8s.sh');
const use = invoke('use', (_a: IdentityAllocator) => undefined, IdentityAllocatorToken);

async function hive(cells: readonly Cell[], values: Record<string, unknown>): Promise<Hive> {
  const h = new Hive(cells, { logger: silentLogger() });
  h.configure({ values });
  h.populate();
  await h.start();
  return h;
}

const labels = (n: number) => parseLabels([`k8s:app=bench${n}`, `k8s:tier=t${n % 5}`, 'k8s:io.kubernetes.pod.namespace=default']);

/** Allocates the sets 32 at a time; the numbers got, by set. */
async function allocateAll(alloc: IdentityAllocator, sets: readonly number[]): Promise<Map<number, number>> {
  const got = new Map<number, number>();
  const queue = [...sets];
  await Promise.all(Array.from({ length: 32 }, async () => {
    for (let n = queue.shift(); n !== undefined; n = queue.shift()) got.set(n, (await alloc.allocate(labels(n))).identity.id);
  }));
  return got;
}

/** Agent i wants every set but those n % 3 == i: 10,000 allocations, every set wanted by two agents. */
const wanted = AGENTS.map((_, i) => Array.from({ length: SETS }, (_, n) => n).filter((n) => n % 3 !== i));

/** Pairs of agents that got different numbers for one set. */
function disagreements(got: readonly Map<number, number>[]): number {
  let bad = 0;
  for (let i = 0; i < got.length; i++) for (let j = i + 1; j < got.length; j++) for (const [n, id] of got[i]!) if (got[j]!.has(n) && got[j]!.get(n) !== id) bad++;
  return bad;
}

async function main(): Promise<void> {
  const check = spawnSync('bash', [K8S_SCRIPT, 'check'], { encoding: 'utf8' });
  if (check.status !== 0) {
    console.log(`identity-crd bench skipped: ${check.stdout.trim() || check.stderr.trim()}`);
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), 'cellium-bench-crdid-'));
  const k8sDir = join(dir, 'k8s');
  const hives: Hive[] = [];
  let etcd: Awaited<ReturnType<typeof launchEtcd>> | undefined;
  const rows: (string | number)[][] = [];
  const allocations = wanted.flat().length;
  try {
    // baseline 1: the embedded backend, one agent, the same allocations
    const embedded = await hive([statedirCell, identityCell, use], { 'state-dir': join(dir, 'embedded') });
    hives.push(embedded);
    let t0 = performance.now();
    for (const w of wanted) await allocateAll(embedded.get(IdentityAllocatorToken), w);
    let secs = (performance.now() - t0) / 1000;
    rows.push(['1 agent, embedded (file) backend (baseline)', allocations, secs, allocations / secs, '-', '-']);

    // baseline 2: etcd, three agents
    if (!etcdSkip()) {
      etcd = await launchEtcd();
      const cfgFile = etcd.configFile();
      const kv = await Promise.all(AGENTS.map((n) => hive([statedirCell, kvstoreCell, identityCell, use], {
        'state-dir': join(dir, `kv-${n}`), kvstore: 'etcd', 'kvstore-opt': `etcd.config=${cfgFile}`, 'node-name': `bench-${n}`, 'identity-allocation-mode': 'kvstore',
      })));
      hives.push(...kv);
      t0 = performance.now();
      const got = await Promise.all(kv.map((h, i) => allocateAll(h.get(IdentityAllocatorToken), wanted[i]!)));
      secs = (performance.now() - t0) / 1000;
      rows.push(['3 agents on etcd, kvstore mode (baseline)', allocations, secs, allocations / secs, '-', String(disagreements(got))]);
    } else {
      console.log(`identity-crd bench: the etcd baseline is skipped: ${etcdSkip()}`);
    }

    // CRD mode: three agents on one apiserver
    const up = spawnSync('bash', [K8S_SCRIPT, 'up', '--dir', k8sDir, '--no-build'], { encoding: 'utf8' });
    if (up.status !== 0) throw new Error(`scripts/k8s.sh up failed: ${up.stderr.trim() || up.stdout.trim()}`);
    const kubeconfig = join(k8sDir, 'kubeconfig');
    const client = newK8sClient({ k8sKubeconfigPath: kubeconfig, k8sApiServer: '' }, {});
    await ensureCrds(client, silentLogger());
    const crd = await Promise.all(AGENTS.map((n) => hive([statedirCell, k8sCell, k8sIdentityCell, identityCell, use], {
      'state-dir': join(dir, `crd-${n}`), 'k8s-kubeconfig-path': kubeconfig, 'k8s-node-name': `bench-${n}`, 'identity-gc-interval': '1h', 'identity-allocation-timeout': '60s',
    })));
    hives.push(...crd);
    t0 = performance.now();
    const got = await Promise.all(crd.map((h, i) => allocateAll(h.get(IdentityAllocatorToken), wanted[i]!)));
    secs = (performance.now() - t0) / 1000;
    const stats = crd.map((h) => (h.get(IdentityBackendToken) as CrdIdentityBackend).stats);
    const taken = stats.reduce((s, x) => s + x.taken, 0);
    const { items } = await apiListWatcher<CiliumIdentity>(client.kubeConfig(), { path: '/apis/cilium.io/v2/ciliumidentities' }).list();
    const byLabels = new Map<string, number>();
    for (const o of items) {
      const k = labelsOf(o)?.join(';') ?? '';
      byLabels.set(k, (byLabels.get(k) ?? 0) + 1);
    }
    const twice = [...byLabels.values()].filter((c) => c > 1).length;
    rows.push([`3 agents on the apiserver, CRD mode (${items.length} CiliumIdentities)`, allocations, secs, allocations / secs, taken, String(disagreements(got) + twice)]);
    rows.push(['goal', '-', '-', '-', '-', '0']);
    printTable(`identity-crd: 10,000 identity allocations at once (${SETS} new label sets, each wanted by 2 agents)`, ['what', 'allocations', 'seconds', 'per second', '409s (number taken first)', 'conflicts (two ids / disagree)'], rows);
  } finally {
    for (const h of hives.reverse()) await h.stop().catch(() => undefined);
    await etcd?.close();
    spawnSync('bash', [K8S_SCRIPT, 'down', '--dir', k8sDir], { encoding: 'utf8' });
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
