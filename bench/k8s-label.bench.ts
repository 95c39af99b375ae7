/**
 * Pod label change -> new identity enforced, through the real kube-apiserver (issue 24): the
 * `cellium-agent` process in Kubernetes mode (its ServiceAccount's token) with pod `web` attached
 * by a real CNI ADD; two NetworkPolicies select it by label (variant=a allows TCP 1111, variant=b
 * TCP 2222). Each round flips the pod's label with `kubectl label pod` and times until the change
 * is enforced: the endpoint API reports the new identity (its labels carry the new value) and the
 * endpoint ready, the kernel's cellium_lxc and cellium_ipcache entries of the pod's address hold
 * that identity (the programs were reloaded with it), and the pod's policy map allows the new
 * variant's port and not the old one's. Baseline in the same run, interleaved: the same flip of a
 * user label through the agent's API (`cellium endpoint labels`, PATCH /v1/endpoint/{id}/labels),
 * with two local rules selecting it (TCP 3333, 4444), until the same signal. Needs root, BPF and
 * the k8s harness.
 */
import { spawn } from 'node:child_process';
import { KubeConfig, KubernetesObjectApi, PatchStrategy, type KubernetesObject } from '@kubernetes/client-node';
import type { AgentProcess } from './lib/agent-process.js';
import type { Cluster } from './lib/k8s-cluster.js';
import { k8sBenchMissing, k8sPodBench, until } from './lib/k8s-agent.js';
import { ipcacheIdentity, lxcIdentity, policyKeys } from './lib/pinned-maps.js';
import { machineLoad, printTable, stats } from './lib/report.js';

const RUNS = Number(process.env.CELLIUM_BENCH_RUNS ?? 40);
const WARMUP = 3;
const NODE = 'bench-node';
const LIMIT_MS = 30_000;

const netpol = (variant: string, port: number): Record<string, unknown> => ({
  apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name: `variant-${variant}`, namespace: 'default' },
  spec: { podSelector: { matchLabels: { variant } }, ingress: [{ ports: [{ port, protocol: 'TCP' }] }] },
});
const localRule = (variant: string, port: number): Record<string, unknown> => ({
  endpointSelector: { matchLabels: { uvariant: variant } }, labels: [`bench=uvariant-${variant}`],
  ingress: [{ fromEntities: ['all'], toPorts: [{ ports: [{ port: String(port), protocol: 'TCP' }] }] }],
});

/** A way to flip a label: `set(value)` makes the pod's label `value`; ports[value] is what the policy of that value allows. */
interface Flip {
  readonly name: string;
  readonly label: string;
  readonly ports: Readonly<Record<'a' | 'b', number>>;
  set(value: 'a' | 'b'): Promise<void>;
}

function kubectl(cluster: Cluster, args: readonly string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const p = spawn('kubectl', args, { env: cluster.env, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    p.stderr.on('data', (b: Buffer) => (err += b.toString()));
    p.once('error', reject);
    p.once('close', (code) => (code === 0 ? resolve() : reject(new Error(`kubectl ${args.join(' ')} failed (${code}): ${err.trim()}`))));
  });
}

/** Whether the change to `label=value` is enforced (see the module comment); the new identity when so. */
async function enforced(agent: AgentProcess, bpfRoot: string, ep: { id: number; ip: string }, flip: Flip, value: 'a' | 'b', old: number): Promise<number | undefined> {
  const e = await agent.client.getEndpoint(ep.id);
  const id = e.status?.identity?.id;
  if (e.status?.state !== 'ready' || id === undefined || id === old || !e.status.identity?.labels?.some((l) => l.endsWith(`:${flip.label}=${value}`))) return undefined;
  if (lxcIdentity(bpfRoot, ep.ip) !== id || ipcacheIdentity(bpfRoot, ep.ip) !== id) return undefined;
  const ports = new Set(policyKeys(bpfRoot, ep.id).filter((k) => !k.egress && k.protocol === 6).map((k) => k.dport));
  const other = value === 'a' ? 'b' : 'a';
  return ports.has(flip.ports[value]) && !ports.has(flip.ports[other]) ? id : undefined;
}

async function main(): Promise<void> {
  const why = k8sBenchMissing();
  if (why) {
    console.log(`k8s-label: skipped: ${why}`);
    return;
  }
  const b = await k8sPodBench('k8slabel', '10.219.0.0/16', NODE, { app: 'web', variant: 'a' }, [netpol('a', 1111), netpol('b', 2222)]);
  try {
    await b.agent.client.putPolicy(JSON.stringify([localRule('a', 3333), localRule('b', 4444)]));
    await b.agent.client.setEndpointLabels(b.endpoint.id, ['uvariant=a']);
    const kc = new KubeConfig();
    kc.loadFromFile(b.cluster.kubeconfig);
    const api = KubernetesObjectApi.makeApiClient(kc);
    const pod = (v: string): KubernetesObject => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web', namespace: 'default', labels: { variant: v } } });
    const flips: Flip[] = [
      { name: 'kubectl label pod (the kubectl process, apiserver, watch, relabel, regeneration)', label: 'variant', ports: { a: 1111, b: 2222 }, set: (v) => kubectl(b.cluster, ['label', 'pod', 'web', '-n', 'default', '--overwrite', `variant=${v}`]) },
      { name: 'the pod\'s labels patched at the apiserver from this process', label: 'variant', ports: { a: 1111, b: 2222 }, set: async (v) => void (await api.patch(pod(v), undefined, undefined, undefined, undefined, PatchStrategy.MergePatch)) },
      { name: 'baseline: user label by the agent API (PATCH /v1/endpoint/{id}/labels)', label: 'uvariant', ports: { a: 3333, b: 4444 }, set: (v) => b.agent.client.setEndpointLabels(b.endpoint.id, [`uvariant=${v}`]) },
    ];
    const out = flips.map(() => ({ enforced: [] as number[], client: [] as number[] }));
    let identity = (await b.agent.client.getEndpoint(b.endpoint.id)).status?.identity?.id ?? 0;
    // every label has the same value between flips: each flip moves its label away from it, the others follow untimed
    let value: 'a' | 'b' = 'a';
    const flipTo = async (flip: Flip, next: 'a' | 'b'): Promise<{ ms: number; client: number }> => {
      const t0 = performance.now();
      let client = NaN;
      const set = flip.set(next).then(() => (client = performance.now() - t0));
      const [, id] = await Promise.all([set, until(`label ${flip.label}=${next} enforced`, () => enforced(b.agent, b.bpfRoot, b.endpoint, flip, next, identity), LIMIT_MS, 1)]);
      identity = id;
      return { ms: performance.now() - t0, client };
    };
    for (let round = -WARMUP; round < RUNS; round++) {
      for (const [i, flip] of flips.entries()) {
        const next: 'a' | 'b' = value === 'a' ? 'b' : 'a';
        const t = await flipTo(flip, next);
        if (round >= 0) {
          out[i]!.enforced.push(t.ms);
          out[i]!.client.push(t.client);
        }
        for (const other of new Set(flips.filter((f) => f.label !== flip.label).map((f) => f.label))) await flipTo(flips.find((f) => f.label === other)!, next);
        value = next;
      }
    }
    printTable(`k8s-label: label change -> new identity enforced (${machineLoad()}; ${RUNS} rounds after ${WARMUP} untimed, interleaved; identity in the API, lxc and ipcache entries, policy map of the new label)`,
      ['path', 'p50 ms', 'p99 ms', 'mean ms', 'its client returned, p50 ms'], flips.map((f, i) => {
        const e = stats(out[i]!.enforced);
        return [f.name, e.p50Ms, e.p99Ms, e.meanMs, stats(out[i]!.client).p50Ms];
      }));
  } finally {
    await b.close();
  }
}

await main();
