/**
 * Initial sync of a loaded cluster (issue 24): 1,000 Pods of 10 Nodes (100 of this node, bound by
 * spec.nodeName: no scheduler, no kubelet), 200 Namespaces and 500 NetworkPolicies created in the
 * real kube-apiserver first, then the `cellium-agent` process started in Kubernetes mode with its
 * ServiceAccount's token: the time from its spawn until `cellium status` says Kubernetes `Ok`
 * (every watched resource listed and synced), until the policy repository holds every
 * NetworkPolicy, and its RSS at sync. Baseline in the same run, before the objects exist: the same
 * agent in the same cluster with no Kubernetes objects of these kinds. Each agent run gets a fresh
 * state directory and BPF root (no restored state). Goal <= 5 s to synced, <= 250 MiB.
 * Needs root, BPF and the k8s harness.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { KubeConfig, KubernetesObjectApi, type KubernetesObject } from '@kubernetes/client-node';
import { cpuMs, root, rss, scratchBase } from './lib/agent-process.js';
import { agentKubeconfig, kubectlOk, startCluster, type Cluster } from './lib/k8s-cluster.js';
import { k8sBenchMissing, nodeObject, podObject, startK8sAgent, until, untilSynced } from './lib/k8s-agent.js';
import { machineLoad, median, printTable, time } from './lib/report.js';

/** Agent starts per side (CELLIUM_BENCH_RUNS overrides). */
const RUNS = Number(process.env.CELLIUM_BENCH_RUNS ?? 3);
const NODES = 10;
const NAMESPACES = 200;
const PODS = 1000;
const POLICIES = 500;
const NODE = 'bench-node-0';
/** Objects written at once while filling the cluster. */
const CONCURRENCY = 8;

/** The loaded cluster's objects, in creation order (namespaces before what lives in them). */
function objects(): { first: KubernetesObject[]; then: KubernetesObject[] } {
  const first: KubernetesObject[] = [];
  for (let n = 0; n < NODES; n++) first.push(nodeObject(`bench-node-${n}`));
  for (let s = 0; s < NAMESPACES; s++) first.push({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: `bench-${s}`, labels: { team: `t${s % 20}` } } } as KubernetesObject);
  const then: KubernetesObject[] = [];
  for (let p = 0; p < PODS; p++) {
    // every 10th pod on this node: 100 of 1,000
    then.push(podObject(`pod-${p}`, `bench-${p % NAMESPACES}`, `bench-node-${p % NODES}`, { app: `app-${p % 50}`, tier: p % 2 ? 'web' : 'db' }));
  }
  for (let i = 0; i < POLICIES; i++) {
    then.push({
      apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name: `np-${i}`, namespace: `bench-${i % NAMESPACES}` },
      spec: {
        podSelector: { matchLabels: { app: `app-${i % 50}` } },
        ingress: [{
          from: [{ podSelector: { matchLabels: { tier: 'web' } } }, { namespaceSelector: { matchLabels: { team: `t${i % 20}` } }, podSelector: { matchLabels: { app: `app-${(i + 1) % 50}` } } }],
          ports: [{ port: 1000 + i, protocol: 'TCP' }, { port: 8000, endPort: 8010, protocol: 'TCP' }],
        }],
      },
    } as KubernetesObject);
  }
  return { first, then };
}

/**
 * Creates `list` with `CONCURRENCY` requests in flight. A Pod refused because its namespace's
 * `default` ServiceAccount does not exist yet (the controller-manager makes it) is retried, at
 * most 100 times 100 ms apart.
 */
async function createAll(api: KubernetesObjectApi, list: readonly KubernetesObject[]): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < list.length) {
      const o = list[next++]!;
      for (let attempt = 0; ; attempt++) {
        try {
          await api.create(o);
          break;
        } catch (err) {
          const text = String((err as { body?: unknown }).body ?? (err as Error).message);
          if (attempt >= 100 || !/serviceaccount/i.test(text)) throw new Error(`creating ${o.kind} ${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}: ${text}`, { cause: err });
          await new Promise((r) => setTimeout(r, 100));
        }
      }
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
}

interface Start {
  /** From the spawn until the CNI server answered. */
  readonly upMs: number;
  /** From the spawn until `cellium status` said Kubernetes Ok. */
  readonly syncedMs: number;
  /** From the spawn until the policy repository held every NetworkPolicy of the cluster. */
  readonly policyMs: number;
  /** The agent's CPU time (user + system) until synced, and until every NetworkPolicy was in the repository. */
  readonly cpuMs: number;
  readonly cpuPolicyMs: number;
  readonly rss: number;
  readonly hwm: number;
}

/** Starts the agent on fresh state, times it to synced and to every NetworkPolicy applied, and stops it. */
async function startOnce(dir: string, run: number, kubeconfig: string, policies: number): Promise<Start> {
  const runDir = mkdtempSync(join(dir, `run${run}-`));
  const bpfRoot = `/sys/fs/bpf/cellium-bench-k8ssync-${process.pid}-${run}`;
  const t0 = performance.now();
  let agent;
  try {
    agent = await startK8sAgent({ dir: runDir, bpfRoot, socketPath: join(runDir, 'cellium.sock'), pool: '10.217.0.0/16' }, kubeconfig, NODE);
    const upMs = performance.now() - t0;
    await untilSynced(agent, 120_000, 20);
    const syncedMs = performance.now() - t0;
    const cpu = cpuMs(agent.pid);
    const m = rss(agent.pid);
    const a = agent;
    await until(`${policies} NetworkPolicies in the policy repository`, async () => {
      // 404: no rule has the label yet
      const p = await a.client.getPolicy(['k8s:io.cilium.k8s.policy.derived-from=NetworkPolicy']).catch((e: { status?: number }) => { if (e.status === 404) return undefined; throw e; });
      return ((JSON.parse(p?.policy ?? '[]') as unknown[] | null)?.length ?? 0) >= policies;
    }, 120_000, 20);
    const policyMs = performance.now() - t0;
    return { upMs, syncedMs, policyMs, cpuMs: cpu, cpuPolicyMs: cpuMs(a.pid), ...m };
  } finally {
    await agent?.stop();
    rmSync(runDir, { recursive: true, force: true });
    rmSync(bpfRoot, { recursive: true, force: true });
  }
}

function row(what: string, s: readonly Start[], goal: string): (string | number)[] {
  const m = (f: (x: Start) => number): number => median(s.map(f));
  return [what, m((x) => x.upMs), m((x) => x.syncedMs), Math.max(...s.map((x) => x.syncedMs)), m((x) => x.policyMs), m((x) => x.cpuMs), m((x) => x.cpuPolicyMs), m((x) => x.rss), Math.max(...s.map((x) => x.hwm)), goal];
}

async function main(): Promise<void> {
  const why = k8sBenchMissing();
  if (why) {
    console.log(`k8s-sync: skipped: ${why}`);
    return;
  }
  const dir = mkdtempSync(join(scratchBase(), 'cellium-bench-k8ssync-'));
  let cluster: Cluster | undefined;
  try {
    cluster = await startCluster();
    const kubeconfig = await agentKubeconfig(cluster, dir);
    // the CRDs registered before either side, so neither run waits for them to be Established
    await kubectlOk(cluster, ['apply', '-f', join(root(), 'deploy', 'crds')]);
    for (const crd of ['ciliumnetworkpolicies', 'ciliumclusterwidenetworkpolicies', 'ciliumendpoints', 'ciliumidentities', 'ciliumnodes']) {
      await kubectlOk(cluster, ['wait', '--for=condition=Established', '--timeout=60s', `crd/${crd}.cilium.io`]);
    }
    const empty: Start[] = [];
    for (let i = 0; i < RUNS; i++) empty.push(await startOnce(dir, i, kubeconfig, 0));

    const kc = new KubeConfig();
    kc.loadFromFile(cluster.kubeconfig);
    const api = KubernetesObjectApi.makeApiClient(kc);
    const { first, then } = objects();
    const fillMs = await time(async () => {
      await createAll(api, first);
      await createAll(api, then);
    });
    const loaded: Start[] = [];
    for (let i = 0; i < RUNS; i++) loaded.push(await startOnce(dir, RUNS + i, kubeconfig, POLICIES));

    printTable(`k8s-sync: agent start until synced (${machineLoad()}; ${RUNS} starts per side, median; the cluster filled with ${first.length + then.length} objects in ${Math.round(fillMs / 1000)} s, ${CONCURRENCY} at a time)`,
      ['cluster', 'CNI server up ms', 'synced ms', 'synced, slowest ms', 'every NetworkPolicy in the repository ms', 'agent CPU until synced ms', 'agent CPU until every NetworkPolicy ms', 'RSS at sync MiB', 'RSS high-water MiB', 'goal'], [
        row(`${PODS} Pods (${PODS / NODES} of this node), ${NAMESPACES} Namespaces, ${POLICIES} NetworkPolicies, ${NODES} Nodes`, loaded, '<= 5,000 ms, <= 250 MiB'),
        row('baseline: no objects of these kinds', empty, ''),
      ]);
  } finally {
    await cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
