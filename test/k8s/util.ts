/** Small helpers of the Kubernetes-mode agent tests. */
export { agentKubeconfig, kubectlOk } from '../../bench/lib/k8s-cluster.js';

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
