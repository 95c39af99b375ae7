/** Small helpers of the Kubernetes-mode agent tests. */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
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

/**
 * The agent's credentials as a DaemonSet pod has them: admin applies the ServiceAccount of
 * deploy/daemonset.yaml and deploy/rbac.yaml, then a token of that ServiceAccount goes into a
 * kubeconfig in `dir` (the cluster's server and CA). Everything run with it is allowed exactly
 * what the ClusterRole grants: a forbidden call fails.
 */
export async function agentKubeconfig(c: Cluster, dir: string): Promise<string> {
  const root = join(import.meta.dirname, '../..');
  const docs = parseAllDocuments(readFileSync(join(root, 'deploy/daemonset.yaml'), 'utf8')).map((d) => d.toJS() as { kind: string });
  await kubectlOk(c, ['apply', '-f', '-'], stringify(docs.find((d) => d.kind === 'ServiceAccount')));
  await kubectlOk(c, ['apply', '-f', join(root, 'deploy/rbac.yaml')]);
  const token = (await kubectlOk(c, ['-n', 'kube-system', 'create', 'token', 'cellium', '--duration=1h'])).trim();
  const file = join(dir, 'cellium.kubeconfig');
  writeFileSync(file, stringify({
    apiVersion: 'v1', kind: 'Config',
    clusters: [{ name: 'c', cluster: { server: c.server, 'certificate-authority': c.caFile } }],
    users: [{ name: 'cellium', user: { token } }],
    contexts: [{ name: 'x', context: { cluster: 'c', user: 'cellium' } }],
    'current-context': 'x',
  }), { mode: 0o600 });
  return file;
}
