/**
 * The Kubernetes tests' control plane: bench/lib/k8s-cluster.ts's launcher (`scripts/k8s.sh up`
 * on loopback under a temporary directory, `down` by PID; shared with the k8s benchmarks), and why
 * these tests skip here. See docs/k8s-harness.md.
 */
import { needs } from '../needs.js';

export { K8S_SCRIPT, k8sScript, run, startCluster, type Cluster, type Run } from '../../bench/lib/k8s-cluster.js';

/**
 * Why the Kubernetes tests cannot run here (one line), or false. Missing Go, an unreachable module
 * proxy or a missing etcd skip; binaries that could be built but are not do NOT skip (CI must run
 * these tests): `startCluster` then fails, naming the command that builds them. `root` adds the
 * need for root (tests that start a kubelet or touch the host's network).
 */
export function k8sSkip(opts: { root?: boolean } = {}): string | false {
  return opts.root ? needs(['root', 'k8s'], 'runs a kubelet and changes the host network') : needs('k8s');
}
