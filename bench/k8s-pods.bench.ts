/**
 * Pod startup on a real node (issue 26): `kubectl apply` of a 20-replica Deployment until all 20
 * pods are Ready, on a node of this machine (`scripts/k8s.sh up --with-kubelet`: kubelet,
 * containerd, Cellium deployed as its DaemonSet). Networks, interleaved round by round on the same
 * node in the same run:
 *  - Cellium (the node's default network: the cellium-cni shim, the agent's IPAM, endpoint and
 *    CiliumEndpoint per pod);
 *  - baseline: the reference `bridge` + `host-local` plugins (containernetworking-plugins), pods of
 *    RuntimeClass `bridge`, whose containerd runtime handler has its own CNI directory.
 * Each round deletes the Deployment and waits until its pods are gone (their CNI DELs done) before
 * the next. The pods run busybox httpd without probes: Ready = the container runs. Goal: Cellium
 * <= 1.0x the bridge. Needs root, Go (the harness's binaries built) and the node's packages.
 */
import { startCluster, k8sUnavailable, kubectlOk, type Cluster } from './lib/k8s-cluster.js';
import { until } from './lib/k8s-agent.js';
import { machineLoad, printTable, ratio, stats } from './lib/report.js';

const REPLICAS = Number(process.env.CELLIUM_BENCH_REPLICAS ?? 20);
const RUNS = Number(process.env.CELLIUM_BENCH_RUNS ?? 5);
const LIMIT_MS = 300_000;

interface Network {
  readonly name: string;
  readonly runtimeClassName?: string;
}

const NETWORKS: readonly Network[] = [
  { name: 'Cellium (DaemonSet, cellium-cni)' },
  { name: 'baseline: bridge + host-local (RuntimeClass bridge)', runtimeClassName: 'bridge' },
];

function deployment(image: string, net: Network): string {
  return JSON.stringify({
    apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'startup', namespace: 'default' },
    spec: {
      replicas: REPLICAS, selector: { matchLabels: { app: 'startup' } },
      template: {
        metadata: { labels: { app: 'startup' } },
        spec: {
          ...(net.runtimeClassName ? { runtimeClassName: net.runtimeClassName } : {}),
          terminationGracePeriodSeconds: 0,
          containers: [{ name: 'web', image, imagePullPolicy: 'Never', command: ['/bin/busybox', 'httpd', '-f', '-p', '8080', '-h', '/www'] }],
        },
      },
    },
  });
}

interface PodList { items: { status: { podIP?: string; conditions?: { type: string; status: string }[] } }[] }

async function readyCount(c: Cluster): Promise<{ ready: number; ips: string[] }> {
  const pods = await c.kubectlJson<PodList>(['get', 'pods', '-l', 'app=startup']);
  const ready = pods.items.filter((p) => p.status.conditions?.some((x) => x.type === 'Ready' && x.status === 'True'));
  return { ready: ready.length, ips: ready.map((p) => p.status.podIP ?? '') };
}

/** One round: apply, time until all Ready; then delete and wait until no pod is left (untimed). */
async function round(c: Cluster, image: string, net: Network): Promise<{ ms: number; ips: string[] }> {
  const t0 = performance.now();
  await kubectlOk(c, ['apply', '-f', '-'], deployment(image, net));
  const done = await until(`${REPLICAS} pods Ready (${net.name})`, async () => {
    const r = await readyCount(c);
    return r.ready === REPLICAS ? r : undefined;
  }, LIMIT_MS, 100);
  const ms = performance.now() - t0;
  await kubectlOk(c, ['delete', 'deployment', 'startup', '--wait=true']);
  await until('the pods gone', async () => (await c.kubectlJson<PodList>(['get', 'pods', '-l', 'app=startup'])).items.length === 0, LIMIT_MS, 200);
  return { ms, ips: done.ips };
}

async function main(): Promise<void> {
  const why = process.getuid?.() !== 0 ? 'needs root (containerd, kubelet, Cellium\'s datapath)' : k8sUnavailable();
  if (why) {
    console.log(`k8s-pods: skipped: ${why}`);
    return;
  }
  const upStart = performance.now();
  const c = await startCluster(undefined, { withKubelet: true });
  const upMs = performance.now() - upStart;
  try {
    const image = c.env.CELLIUM_K8S_BUSYBOX_IMAGE!;
    const out = NETWORKS.map(() => [] as number[]);
    const seen = NETWORKS.map(() => new Set<string>());
    // one untimed round each first: the images' first unpack, the agent's first endpoints
    for (let r = -1; r < RUNS; r++) {
      for (const [i, net] of NETWORKS.entries()) {
        const { ms, ips } = await round(c, image, net);
        if (r >= 0) out[i]!.push(ms);
        for (const ip of ips) seen[i]!.add(ip.split('.').slice(0, 2).join('.'));
      }
    }
    const base = stats(out[1]!);
    const rows = NETWORKS.map((net, i) => {
      const s = stats(out[i]!);
      return [net.name, s.p50Ms / 1000, s.meanMs / 1000, s.minMs / 1000, s.maxMs / 1000, [...seen[i]!].map((p) => `${p}.*`).join(' '), i === 0 ? ratio(s.p50Ms, base.p50Ms, '<= 1.0x') : ''];
    });
    printTable(`k8s-pods: kubectl apply of a ${REPLICAS}-replica Deployment until all Ready, one node of this machine (${machineLoad()}; ${RUNS} rounds after 1 untimed, interleaved; up --with-kubelet took ${(upMs / 1000).toFixed(0)} s)`,
      ['network', 'p50 s', 'mean s', 'min s', 'max s', 'pod addresses', 'p50 vs bridge'], rows);
  } finally {
    await c.stop();
  }
}

await main();
