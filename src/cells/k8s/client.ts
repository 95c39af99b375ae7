/**
 * The agent's connection to Kubernetes: a KubeConfig from --k8s-kubeconfig-path, or the in-cluster
 * ServiceAccount (KUBERNETES_SERVICE_HOST and the mounted token), with --k8s-api-server overriding
 * the server. Without either, `enabled` is false and nothing talks to an apiserver.
 */
import { existsSync } from 'node:fs';
import type { KubeConfig } from '@kubernetes/client-node';
import { k8sLib } from './client-lib.js';
import { badK8sConfig, k8sDisabled } from './errors.js';
import type { K8sConfig } from './config.js';

/** Where the kubelet mounts a pod's ServiceAccount token. */
export const IN_CLUSTER_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

/** A configured (or disabled) Kubernetes client. */
export interface K8sClient {
  readonly enabled: boolean;
  /** The apiserver URL ('' when disabled). */
  readonly server: string;
  /** The credentials and server; throws when disabled. */
  kubeConfig(): KubeConfig;
}

/** Builds the client from the flags and the environment; bad flags throw naming the flag. */
export function newK8sClient(cfg: Pick<K8sConfig, 'k8sKubeconfigPath' | 'k8sApiServer'>, env: NodeJS.ProcessEnv = process.env): K8sClient {
  const inCluster = !!env.KUBERNETES_SERVICE_HOST && existsSync(IN_CLUSTER_TOKEN);
  if (!cfg.k8sKubeconfigPath && !inCluster) {
    if (cfg.k8sApiServer) throw badK8sConfig('k8s-api-server', cfg.k8sApiServer, 'needs credentials: give --k8s-kubeconfig-path=FILE too (or run in a pod with a ServiceAccount)');
    return { enabled: false, server: '', kubeConfig: () => { throw k8sDisabled('this'); } };
  }
  const kc = new (k8sLib().KubeConfig)();
  if (cfg.k8sKubeconfigPath) {
    if (!existsSync(cfg.k8sKubeconfigPath)) throw badK8sConfig('k8s-kubeconfig-path', cfg.k8sKubeconfigPath, 'no such file: give the path of a kubeconfig');
    try {
      kc.loadFromFile(cfg.k8sKubeconfigPath);
    } catch (err) {
      throw badK8sConfig('k8s-kubeconfig-path', cfg.k8sKubeconfigPath, `not a usable kubeconfig: ${(err as Error).message}`);
    }
  } else {
    kc.loadFromCluster();
  }
  const current = kc.getCurrentCluster();
  if (!current) throw badK8sConfig('k8s-kubeconfig-path', cfg.k8sKubeconfigPath, 'the kubeconfig has no current context with a cluster: set current-context');
  let server = current.server;
  if (cfg.k8sApiServer) {
    let url: URL;
    try {
      url = new URL(cfg.k8sApiServer);
    } catch {
      throw badK8sConfig('k8s-api-server', cfg.k8sApiServer, 'not a URL: give https://host:port');
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw badK8sConfig('k8s-api-server', cfg.k8sApiServer, 'give an https:// (or http://) URL');
    server = cfg.k8sApiServer.replace(/\/$/, '');
    const clusters = kc.clusters.map((c) => (c.name === current.name ? { ...c, server } : c));
    kc.loadFromOptions({ clusters, users: kc.users, contexts: kc.contexts, currentContext: kc.currentContext });
  }
  return { enabled: true, server, kubeConfig: () => kc };
}
