/**
 * An endpoint's labels from its Pod and Namespace, as Cilium derives them (pkg/k8s/utils
 * SanitizePodLabels, then pkg/labelsfilter's default identity-relevant filter), all with source
 * `k8s`:
 *
 * - the pod's labels, except those under `io.cilium.k8s` (Cilium's own: a pod cannot forge them)
 *   and those the default filter drops (per-pod churn such as `pod-template-hash`, and keys under
 *   `io.kubernetes`, `kubernetes.io`, `k8s.io`, `*beta.kubernetes.io`, `annotation.`);
 * - `io.cilium.k8s.namespace.labels.<key>` for every label of the namespace;
 * - `io.kubernetes.pod.namespace=<namespace>` (overriding any pod label of that name);
 * - `io.cilium.k8s.policy.serviceaccount=<spec.serviceAccountName>` when it has one;
 * - `io.cilium.k8s.policy.cluster=<cluster name>`.
 */
import type { Namespace, Pod } from './types.js';

/** Label keys Cilium derives (k8sConst in Cilium). */
export const K8S_LABEL_KEYS = {
  podNamespace: 'io.kubernetes.pod.namespace',
  namespaceLabels: 'io.cilium.k8s.namespace.labels',
  serviceAccount: 'io.cilium.k8s.policy.serviceaccount',
  cluster: 'io.cilium.k8s.policy.cluster',
  ciliumPrefix: 'io.cilium.k8s',
} as const;

/** Kept even where an exclusion below would match (Cilium's inclusive default prefixes). */
const INCLUDE = [/^io\.kubernetes\.pod\.namespace$/, /^io\.cilium\.k8s\.namespace\.labels\./, /^app\.kubernetes\.io/, /^io\.cilium\.k8s\.policy\./];

/** Not identity-relevant (Cilium's exclusive default prefixes, matched at the key's start). */
const EXCLUDE = [
  /^io\.kubernetes/, /^kubernetes\.io/, /^statefulset\.kubernetes\.io\/pod-name/, /^apps\.kubernetes\.io\/pod-index/,
  /^batch\.kubernetes\.io\/job-completion-index/, /^batch\.kubernetes\.io\/controller-uid/, /^.*beta\.kubernetes\.io/, /^k8s\.io/,
  /^pod-template-generation/, /^pod-template-hash/, /^controller-revision-hash/, /^controller-uid/, /^annotation\./, /^etcd_node/,
];

/** Whether a `k8s:` label key counts for the identity (Cilium's default label filter). */
export function identityRelevant(key: string): boolean {
  if (INCLUDE.some((r) => r.test(key))) return true;
  return !EXCLUDE.some((r) => r.test(key));
}

/**
 * The endpoint labels (`k8s:key=value`, sorted) of a pod in its namespace. `namespace` must be
 * the pod's (its name is the pod's metadata.namespace); `clusterName` is --cluster-name.
 */
export function podEndpointLabels(pod: Pod, namespace: Namespace, clusterName: string): string[] {
  const nsName = pod.metadata?.namespace ?? '';
  if (namespace.metadata?.name !== nsName) throw new Error(`pod ${nsName}/${pod.metadata?.name ?? ''}: the namespace given is ${JSON.stringify(namespace.metadata?.name)}, not the pod's`);
  const labels = new Map<string, string>();
  for (const [k, v] of Object.entries(pod.metadata?.labels ?? {})) {
    if (!k.startsWith(K8S_LABEL_KEYS.ciliumPrefix)) labels.set(k, v);
  }
  for (const [k, v] of Object.entries(namespace.metadata?.labels ?? {})) labels.set(`${K8S_LABEL_KEYS.namespaceLabels}.${k}`, v);
  labels.set(K8S_LABEL_KEYS.podNamespace, nsName);
  const sa = pod.spec?.serviceAccountName;
  if (sa) labels.set(K8S_LABEL_KEYS.serviceAccount, sa);
  else labels.delete(K8S_LABEL_KEYS.serviceAccount);
  labels.set(K8S_LABEL_KEYS.cluster, clusterName);
  return [...labels].filter(([k]) => identityRelevant(k)).map(([k, v]) => `k8s:${k}${v === '' ? '' : `=${v}`}`).sort();
}
