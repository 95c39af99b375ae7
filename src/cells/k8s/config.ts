/**
 * Configuration of the k8s cell, Cilium's flags: `--k8s-kubeconfig-path` (the kubeconfig the agent
 * uses), `--k8s-api-server` (the apiserver URL, overriding the kubeconfig's) and `--k8s-node-name`
 * (whose Pods the agent watches: K8S_NODE_NAME, which the DaemonSet sets from spec.nodeName, else
 * the host name). Neither of the first two set and no in-cluster ServiceAccount: Kubernetes is disabled.
 */
import { hostname } from 'node:os';
import { duration, string, type ValuesOf } from '../../hive/config/fields.js';
import { token } from '../../hive/token.js';

/** Schema of the k8s configuration. */
export const k8sConfigSchema = {
  k8sKubeconfigPath: string('', 'Path of the kubeconfig to reach the Kubernetes apiserver with (empty: the in-cluster ServiceAccount when running in a pod, else Kubernetes is disabled)'),
  k8sApiServer: string('', 'Kubernetes apiserver URL (https://host:port); overrides the kubeconfig\'s server'),
  k8sPodWaitTimeout: duration('30s', 'How long a CNI ADD waits for its Pod (and Namespace) to be seen from the apiserver before it fails'),
  k8sNodeName: string(process.env.K8S_NODE_NAME || hostname().toLowerCase(), 'Name of this node\'s Node object: only its Pods are watched (default: $K8S_NODE_NAME, else the host name)'),
};

/** The k8s configuration values. */
export type K8sConfig = ValuesOf<typeof k8sConfigSchema>;

/** Token for the k8s configuration. */
export const K8sConfigToken = token<K8sConfig>('K8sConfig');
