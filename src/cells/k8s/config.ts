/**
 * Configuration of the k8s cell, Cilium's flags: `--k8s-kubeconfig-path` (the kubeconfig the agent
 * uses) and `--k8s-api-server` (the apiserver URL, overriding the kubeconfig's). Neither set and no
 * in-cluster ServiceAccount: Kubernetes is disabled.
 */
import { string, type ValuesOf } from '../../hive/config/fields.js';
import { token } from '../../hive/token.js';

/** Schema of the k8s configuration. */
export const k8sConfigSchema = {
  k8sKubeconfigPath: string('', 'Path of the kubeconfig to reach the Kubernetes apiserver with (empty: the in-cluster ServiceAccount when running in a pod, else Kubernetes is disabled)'),
  k8sApiServer: string('', 'Kubernetes apiserver URL (https://host:port); overrides the kubeconfig\'s server'),
};

/** The k8s configuration values. */
export type K8sConfig = ValuesOf<typeof k8sConfigSchema>;

/** Token for the k8s configuration. */
export const K8sConfigToken = token<K8sConfig>('K8sConfig');
