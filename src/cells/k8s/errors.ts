/** Errors of the k8s cell, each naming the field or the condition and the fix. */

/** What went wrong. */
export type K8sErrorCode = 'config' | 'api' | 'watch' | 'disabled';

/** An error of the k8s cell. */
export class K8sError extends Error {
  override readonly name = 'K8sError';
  constructor(
    readonly code: K8sErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** The kubeconfig (--k8s-kubeconfig-path) or the apiserver URL (--k8s-api-server) cannot be used. */
export function badK8sConfig(field: string, value: string, why: string): K8sError {
  return new K8sError('config', `--${field}=${JSON.stringify(value)}: ${why}`);
}

/** The apiserver answered a request with an error or not at all. */
export function apiFailed(what: string, why: string, cause?: unknown): K8sError {
  return new K8sError('api', `kubernetes: ${what}: ${why}; check that the apiserver is reachable and the agent's account may read it (kubectl auth can-i list … --as=…)`, { cause });
}

/** The apiserver does not serve the collection (404): an API group or CRD it does not have. */
export function apiNotServed(path: string): K8sError {
  return new K8sError('api', `kubernetes: GET ${path}: 404: the apiserver does not serve this API; install its CustomResourceDefinition (Cilium's CRDs: deploy/) or use a Kubernetes version that has it`);
}

/** A watch failed (the Resource relists after a backoff). */
export function watchFailed(resource: string, why: string, cause?: unknown): K8sError {
  return new K8sError('watch', `kubernetes: watch of ${resource} failed: ${why}; relisting after a backoff`, { cause });
}

/** Kubernetes is not configured. */
export function k8sDisabled(what: string): K8sError {
  return new K8sError('disabled', `${what} needs Kubernetes: start the agent with --k8s-kubeconfig-path=FILE (or inside a pod, where the in-cluster ServiceAccount is used)`);
}

/** A CNI ADD's Pod (or its Namespace) was not seen from the apiserver within --k8s-pod-wait-timeout. */
export function podNotSeen(namespace: string, pod: string, nodeName: string, waitMs: number, podSeen: boolean): K8sError {
  const what = podSeen ? `namespace ${namespace} of pod ${namespace}/${pod}` : `pod ${namespace}/${pod}`;
  return new K8sError('api', `kubernetes: ${what} not seen from the apiserver within ${waitMs} ms: check that the pod is scheduled to this node (--k8s-node-name=${nodeName}), that the agent may list and watch pods and namespaces (cellium status), or wait longer (--k8s-pod-wait-timeout)`);
}

/** A CNI ADD came while the watched resources had not all synced, and they did not within --k8s-pod-wait-timeout. */
export function cachesNotSynced(waitMs: number, waiting: readonly string[]): K8sError {
  return new K8sError('api', `kubernetes: the agent's caches are not synced within ${waitMs} ms (${waiting.length ? `waiting for ${waiting.join(', ')}` : 'applying the policy'}): ` +
    'a pod endpoint gets the policy of the synced caches only; check that the apiserver is reachable and the agent may list and watch them (cellium status), or wait longer (--k8s-pod-wait-timeout)');
}
