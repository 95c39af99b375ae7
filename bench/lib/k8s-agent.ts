/**
 * The agent in Kubernetes mode for the k8s benches: why they cannot run here, the `cellium-agent`
 * process with its ServiceAccount's kubeconfig (deploy/rbac.yaml, never admin) until
 * `cellium status` says every watched resource synced, Node and Pod objects of the bench's nodes
 * (no kubelet runs: Pods are bound by `spec.nodeName`), and a pod attached the way a kubelet
 * attaches it: a CNI ADD through the real shim (bin/cellium-cni) into a network namespace.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { bpfAvailable } from '../../src/bpf/index.js';
import { root, scratchBase, startAgent, type AgentProcess, type AgentRun } from './agent-process.js';
import { agentKubeconfig, k8sUnavailable, kubectlOk, startCluster, type Cluster } from './k8s-cluster.js';
import { etcdSkip } from './etcd.js';

/** Why a k8s bench cannot run here (root, BPF, a control plane, the built shim and agent), or undefined. */
export function k8sBenchMissing(): string | undefined {
  if (process.getuid?.() !== 0) return 'needs root (network namespaces, BPF)';
  const a = bpfAvailable();
  if (!a.ok) return `BPF unavailable: ${a.reason}`;
  const etcd = etcdSkip();
  if (etcd) return etcd;
  const k8s = k8sUnavailable();
  if (k8s) return k8s;
  if (!existsSync(join(root(), 'bin', 'cellium-cni'))) return 'needs bin/cellium-cni (npm run build)';
  return undefined;
}

/** Polls `fn` every `stepMs` until it gives a truthy value; throws naming `what` after `ms`. */
export async function until<T>(what: string, fn: () => Promise<T | undefined | false> | T | undefined | false, ms: number, stepMs = 2): Promise<T> {
  const deadline = performance.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (performance.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, stepMs));
  }
}

/** Starts the agent with `kubeconfig` as node `node`; resolves once its CNI server answers (not yet synced). */
export function startK8sAgent(run: AgentRun, kubeconfig: string, node: string): Promise<AgentProcess> {
  return startAgent({ ...run, flags: { 'k8s-kubeconfig-path': kubeconfig, 'k8s-node-name': node, ...run.flags } });
}

/** Waits until `cellium status` says Kubernetes `Ok` (the version and every watched resource synced); the error says its last status. */
export async function untilSynced(agent: AgentProcess, ms: number, stepMs = 10): Promise<void> {
  let last = '';
  try {
    await until('the agent\'s Kubernetes caches to sync (cellium status: Kubernetes Ok)', async () => {
      const k = (await agent.client.status()).kubernetes;
      last = `${k?.state ?? '?'} ${k?.msg ?? ''}`;
      return k?.state === 'Ok';
    }, ms, stepMs);
  } catch (err) {
    throw new Error(`${(err as Error).message}; the last status: Kubernetes ${last}`, { cause: err });
  }
}

/** A Node object (no kubelet: the controllers see it NotReady, which the bench pods tolerate). */
export function nodeObject(name: string): Record<string, unknown> {
  return { apiVersion: 'v1', kind: 'Node', metadata: { name, labels: { 'kubernetes.io/hostname': name } } };
}

/**
 * A Pod bound to `node` (spec.nodeName: no scheduler), tolerating every taint: nodes without a
 * kubelet get the unreachable taint, and their pods must not be evicted while the bench runs.
 */
export function podObject(name: string, namespace: string, node: string, labels: Record<string, string>): Record<string, unknown> {
  return {
    apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace, labels },
    spec: { nodeName: node, tolerations: [{ operator: 'Exists' }], containers: [{ name: 'c', image: 'localhost/none:never' }] },
  };
}

/**
 * Attaches pod `namespace/name` as the kubelet does: a network namespace `netns` (created here;
 * the caller deletes it) and a CNI ADD through bin/cellium-cni to the agent's socket. Returns the
 * pod's IPv4 address.
 */
export async function cniAddPod(socketPath: string, netns: string, namespace: string, name: string): Promise<string> {
  execFileSync('ip', ['netns', 'add', netns]);
  const conf = JSON.stringify({ cniVersion: '1.0.0', name: 'cellium', type: 'cellium-cni', 'socket-path': socketPath });
  const env = {
    CNI_COMMAND: 'ADD', CNI_CONTAINERID: `bench-${netns}`, CNI_IFNAME: 'eth0', CNI_PATH: '/opt/cni/bin', CNI_NETNS: `/var/run/netns/${netns}`,
    CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${namespace};K8S_POD_NAME=${name}`,
  };
  const out = await new Promise<string>((resolve, reject) => {
    const p = spawn(join(root(), 'bin', 'cellium-cni'), { env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    p.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    p.once('error', reject);
    p.once('close', (code) => (code === 0 ? resolve(stdout) : reject(new Error(`CNI ADD of ${namespace}/${name} failed (${code}): ${stdout}${stderr}`))));
    p.stdin.end(conf);
  });
  return (JSON.parse(out) as { ips: { address: string }[] }).ips[0]!.address.split('/')[0]!;
}

/** Deletes network namespaces (those never created are skipped). */
export function removeNetns(names: readonly string[]): void {
  for (const n of names) {
    try {
      execFileSync('ip', ['netns', 'del', n], { stdio: 'ignore' });
    } catch {
      // not created
    }
  }
}

/** A control plane, the agent with its ServiceAccount's token, and one pod of its node attached by a CNI ADD. */
export interface K8sPodBench {
  readonly cluster: Cluster;
  readonly agent: AgentProcess;
  readonly dir: string;
  readonly bpfRoot: string;
  readonly socketPath: string;
  /** The pod's endpoint id and address. */
  readonly endpoint: { readonly id: number; readonly ip: string };
  /** Stops the agent (by PID), removes the pod's namespace, the BPF root and the directory, and stops the control plane. */
  close(): Promise<void>;
}

/**
 * Starts a control plane, creates Node `node` and Pod `default/web` with `labels` bound to it
 * (and `objects` with kubectl), starts the agent until synced and attaches the pod. `name` names
 * the run's files (`cellium-bench-<name>-…`); `pool` is the agent's pod CIDR.
 */
export async function k8sPodBench(name: string, pool: string, node: string, labels: Record<string, string>, objects: readonly Record<string, unknown>[] = []): Promise<K8sPodBench> {
  const dir = mkdtempSync(join(scratchBase(), `cellium-bench-${name}-`));
  const bpfRoot = `/sys/fs/bpf/cellium-bench-${name}-${process.pid}`;
  const netns = `cb${name}-${process.pid}`;
  const socketPath = join(dir, 'cellium.sock');
  let cluster: Cluster | undefined;
  let agent: AgentProcess | undefined;
  const close = async (): Promise<void> => {
    await agent?.stop();
    removeNetns([netns]);
    rmSync(bpfRoot, { recursive: true, force: true });
    await cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    cluster = await startCluster();
    const kubeconfig = await agentKubeconfig(cluster, dir);
    for (const o of [nodeObject(node), podObject('web', 'default', node, labels), ...objects]) await kubectlOk(cluster, ['apply', '-f', '-'], JSON.stringify(o));
    agent = await startK8sAgent({ dir, bpfRoot, socketPath, pool }, kubeconfig, node);
    await untilSynced(agent, 120_000);
    const ip = await cniAddPod(socketPath, netns, 'default', 'web');
    const ep = (await agent.client.listEndpoints()).find((e) => e.status?.['external-identifiers']?.['k8s-pod-name'] === 'web');
    if (!ep) throw new Error('the pod default/web has no endpoint after its CNI ADD');
    return { cluster, agent, dir, bpfRoot, socketPath, endpoint: { id: ep.id, ip }, close };
  } catch (err) {
    await close();
    throw err;
  }
}
