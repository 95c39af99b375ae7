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
