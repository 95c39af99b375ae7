// Shared setup of the fail-closed tests in Kubernetes mode: a real control plane, the agent's
// ServiceAccount credentials (deploy/rbac.yaml), three Pods of node `node-a` (app=server,
// app=client, app=bad), and the built `cellium-agent` process (BPF datapath) with pods plumbed as
// the CNI plugin leaves them in network namespaces of the test, their endpoints created as the CNI
// ADD creates them (labels from the Pods). Plus NetworkPolicies allowing app=client one TCP port of
// app=server, and the probes: TCP connects and the continuous watch of packets that are denied
// in every state the test goes through.
import type { Test } from 'tap';
import {
  Cleanup, agentProcess, allocatePod, connects, endpointRequest, startPing, tempDir, until, type AgentProcess, type Ping, type Pod,
} from '../root-datapath-agent/fixtures.js';
import { startCluster, type Cluster } from './cluster.js';
import { agentKubeconfig, kubectlOk } from './util.js';

/** The node the agent runs as. */
export const NODE = 'node-a';

/** A running setup. */
export interface Enforcement {
  readonly c: Cleanup;
  readonly cluster: Cluster;
  readonly ap: AgentProcess;
  agent: ReturnType<AgentProcess['start']>;
  readonly server: Pod;
  readonly client: Pod;
  readonly bad: Pod;
}

/** A NetworkPolicy: app=client may reach app=server on TCP `port` (app=server is default-deny on ingress). */
export function allowPort(name: string, port: number): string {
  return JSON.stringify({
    apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name, namespace: 'default' },
    spec: { podSelector: { matchLabels: { app: 'server' } }, ingress: [{ from: [{ podSelector: { matchLabels: { app: 'client' } } }], ports: [{ port }] }] },
  });
}

/** Starts the control plane, the agent (with `policies` applied first) and the three pods with their endpoints. */
export async function setUp(t: Test, pool: string, policies: readonly string[]): Promise<Enforcement> {
  const c = new Cleanup(t);
  const cluster = await startCluster(c);
  const dir = tempDir(c, 'k8s-enforcement');
  const kubeconfig = await agentKubeconfig(cluster, dir);
  for (const app of ['server', 'client', 'bad']) {
    await kubectlOk(cluster, ['create', '-f', '-'], JSON.stringify({
      apiVersion: 'v1', kind: 'Pod', metadata: { name: app, namespace: 'default', labels: { app } },
      spec: { nodeName: NODE, containers: [{ name: 'c', image: 'localhost/none:never' }] },
    }));
  }
  for (const p of policies) await kubectlOk(cluster, ['apply', '-f', '-'], p);
  const ap = agentProcess(c, 'k8s-enforcement', pool, [
    `--k8s-kubeconfig-path=${kubeconfig}`, `--k8s-node-name=${NODE}`, '--endpoint-regen-interval=2s',
  ]);
  const agent = ap.start();
  if (!(await ap.up(agent))) throw new Error(`the agent did not serve its API: ${agent.log().slice(-3000)}`);
  const pods: Pod[] = [];
  for (const app of ['server', 'client', 'bad']) {
    const pod = await allocatePod(c, ap.client, app);
    await ap.client.createEndpoint(0, endpointRequest(pod, []));
    pods.push(pod);
  }
  const [server, client, bad] = pods as [Pod, Pod, Pod];
  return { c, cluster, ap, agent, server, client, bad };
}

/** Probes that must fail at every moment: `bad` pinging the server (ICMP) and `client` connecting to a port no policy allows. */
export interface DeniedWatch {
  /** Replies the bad pod got, and connections to the never-allowed port that went through. */
  passed(): { pings: number; connects: number; probes: number };
  stop(): Promise<void>;
}

/** Starts the denied-traffic watch: a ping every 50 ms and a TCP connect to `port` about every 200 ms. */
export function watchDenied(e: Enforcement, port: number): DeniedWatch {
  const ping: Ping = startPing(e.c, e.bad, e.server, 0.05);
  let stopped = false;
  let opened = 0;
  let probes = 0;
  const loop = (async () => {
    while (!stopped) {
      if (await connects(e.client, e.server, port).catch(() => false)) opened++;
      probes++;
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  return {
    passed: () => ({ pings: ping.replies(), connects: opened, probes }),
    stop: async () => {
      stopped = true;
      await loop;
      await ping.stop();
    },
  };
}

/** Waits (bounded) until client->server reaches exactly the ports in `open` among `ports`. */
export async function untilPorts(e: Enforcement, ports: readonly number[], open: readonly number[], ms = 60_000): Promise<boolean> {
  return until(async () => {
    for (const p of ports) if ((await connects(e.client, e.server, p)) !== open.includes(p)) return false;
    return true;
  }, ms, 200);
}
