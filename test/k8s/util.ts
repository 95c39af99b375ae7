/** Small helpers of the Kubernetes-mode agent tests. */
import type { Cluster } from './cluster.js';

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

/** Runs kubectl (admin) and returns its stdout; throws with its stderr when it fails. */
export async function kubectlOk(c: Cluster, args: string[], input?: string): Promise<string> {
  const r = await c.kubectl(args, input);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}
