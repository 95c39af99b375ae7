/** Errors of the CiliumEndpoint sync, each naming the object, what failed and the fix. */
import { K8sError } from '../k8s/index.js';

/** A request on a CiliumEndpoint got an error answer; a 403 names the RBAC verb and deploy/rbac.yaml. */
export function cepRequestFailed(verb: string, key: string, status: number, message: string): K8sError {
  if (status === 403) {
    return new K8sError('api', `kubernetes: ${verb} ciliumendpoints ${key} is forbidden (${message}); ` +
      `the agent's ClusterRole needs verb "${verb}" on ciliumendpoints (apiGroup cilium.io): kubectl apply -f deploy/rbac.yaml`);
  }
  if (status === 404 && verb === 'create') {
    return new K8sError('api', `kubernetes: create ciliumendpoints ${key}: 404 ${message}; the CiliumEndpoint CRD is not installed: ` +
      'let the agent register it (no --skip-crd-creation) or kubectl apply -f deploy/crds/, or start the agent with --disable-endpoint-crd');
  }
  return new K8sError('api', `kubernetes: ${verb} ciliumendpoints ${key} failed: ${status} ${message}; check that the apiserver is reachable`);
}

/** The endpoint's Pod is not in the agent's cache (not seen yet, or of another node). */
export function podUnknown(key: string, node: string): K8sError {
  return new K8sError('api', `kubernetes: pod ${key} is not among this node's pods (--k8s-node-name=${node}): ` +
    'its CiliumEndpoint needs the Pod\'s uid (owner reference); check that the pod is scheduled here and that the agent may list and watch pods');
}

/** The cached Pod is another incarnation than the one the endpoint was added for (same name, new uid). */
export function podUidMismatch(key: string, cached: string, wanted: string): K8sError {
  return new K8sError('api', `kubernetes: pod ${key} has uid ${cached}, the endpoint was added for uid ${wanted}: ` +
    'waiting for the watch to bring the pod the CNI ADD was for (or for the DEL of this endpoint)');
}

/** A CiliumEndpoint of that name exists and is not this endpoint's (another node's, or another pod's). */
export function cepTaken(key: string, why: string): K8sError {
  return new K8sError('api', `kubernetes: CiliumEndpoint ${key} exists and is not this endpoint's (${why}): ` +
    'waiting for its owner to remove it (an agent removes its pod\'s CiliumEndpoint at DEL; Kubernetes removes it with its pod)');
}

/** The CiliumEndpoint was not written within the ADD's wait. */
export function cepNotWritten(key: string, ms: number, last: string): K8sError {
  return new K8sError('api', `kubernetes: CiliumEndpoint ${key} not written within ${ms} ms: ${last || 'no answer yet'}; ` +
    'the CNI ADD fails (the kubelet retries it); wait longer with --k8s-cep-create-timeout');
}
