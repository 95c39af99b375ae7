/** The k8s cell's wiring: its module, the client it provides, and the Resource factory other cells use (index.ts is its public face). */
import { config, module, provide, type DepsValues } from '../../hive/cell.js';
import { HealthToken, type Health } from '../../hive/health.js';
import type { Lifecycle } from '../../hive/lifecycle.js';
import type { Logger } from '../../hive/logger.js';
import { token } from '../../hive/token.js';
import { newK8sClient, type K8sClient } from './client.js';
import { K8sConfigToken, k8sConfigSchema } from './config.js';
import { k8sDisabled } from './errors.js';
import { apiListWatcher, type ListWatchOptions } from './listwatch.js';
import { Resource, type K8sObject, type ResourceOptions } from './resource.js';

/** Token for the Kubernetes client (disabled without --k8s-kubeconfig-path or an in-cluster ServiceAccount). */
export const K8sClientToken = token<K8sClient>('K8sClient');

const clientDeps = { cfg: K8sConfigToken, health: HealthToken } as const;

/** Builds the client and says in the health tree whether and where Kubernetes is used. */
function provideClient({ cfg, health }: DepsValues<typeof clientDeps>): K8sClient {
  const client = newK8sClient(cfg);
  health.ok(client.enabled ? `apiserver ${client.server}` : 'disabled: no --k8s-kubeconfig-path and not in a pod');
  return client;
}

/**
 * A Resource of the collection `opts.path` (Cilium's resource.New), for a cell's provider: its
 * reflector starts with the hive (not waiting for the first list: await `synced` or `store()`) and
 * stops with it; its health scope `name` is ok once synced, degraded while it retries.
 */
export function newResource<T extends K8sObject>(
  client: K8sClient, lc: Lifecycle, health: Health, log: Logger, name: string, opts: ListWatchOptions & ResourceOptions,
): Resource<T> {
  if (!client.enabled) throw k8sDisabled(`the ${name} resource`);
  const h = health.scope(name);
  const resource = new Resource<T>(name, apiListWatcher<T>(client.kubeConfig(), opts), {
    ...opts,
    onError: (err) => {
      // the message says it all: the error again beside it would print it twice
      h.degraded(`retrying: ${err.message}`);
      log.warn({ err, resource: name }, 'kubernetes resource failed; relisting after a backoff');
      opts.onError?.(err);
    },
  });
  lc.append({
    name: `k8s-resource-${name}`,
    onStart: () => {
      h.ok('listing');
      resource.start();
      void resource.synced.then(() => h.ok('synced'));
    },
    onStop: async () => {
      await resource.stop();
      h.stopped('stopped');
    },
  });
  return resource;
}

/** The k8s cell. */
export const k8sCell = module(
  'k8s',
  'Kubernetes client and resources',
  config(K8sConfigToken, k8sConfigSchema),
  provide(K8sClientToken, provideClient, clientDeps),
);
