/** Small helpers of the Kubernetes-mode agent tests. */
import { kubectlOk, type Cluster } from '../../bench/lib/k8s-cluster.js';

export { agentKubeconfig, kubectlOk } from '../../bench/lib/k8s-cluster.js';

/**
 * Creates a Node without a kubelet and posts its Ready heartbeat every 10 s, as a kubelet would:
 * without one the node lifecycle controller marks the node's pods not ready after its grace period
 * and their endpoints leave the slices (the EndpointSlice controller also skips pods of unknown
 * nodes). Returns the function that stops the heartbeat.
 */
export async function nodeWithHeartbeat(cluster: Cluster, name: string): Promise<() => void> {
  await kubectlOk(cluster, ['create', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name } }));
  const beat = (): void => {
    const now = new Date().toISOString();
    void cluster.kubectl(['patch', 'node', name, '--subresource=status', '--type=merge', '-p', JSON.stringify({
      status: { conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'test heartbeat', lastHeartbeatTime: now, lastTransitionTime: now }] },
    })]);
  };
  beat();
  const timer = setInterval(beat, 10_000);
  return () => clearInterval(timer);
}

/** Polls `fn` every 100 ms until it gives a truthy value (bounded by `ms`, then throws naming `what`). */
export async function until<T>(what: string, fn: () => Promise<T | undefined | false> | T | undefined | false, ms = 60_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
