/**
 * The k8s-resources cell (module `k8s-resources`): the agent's resources (resources.ts), each in
 * the health tree under its name, and the `kubernetes` status line (status.ts).
 */
import { module, provide, provideInto } from '../../hive/cell.js';
import { HealthToken, type Health } from '../../hive/health.js';
import { LifecycleToken, type Lifecycle } from '../../hive/lifecycle.js';
import { LoggerToken, type Logger } from '../../hive/logger.js';
import { token } from '../../hive/token.js';
import { StatusSectionsToken, type StatusSection } from '../agent-status/index.js';
import { K8sClientToken } from './cell.js';
import type { K8sClient } from './client.js';
import type { K8sObject } from './resource.js';
import { AGENT_RESOURCES, resourceProviders, type AgentResource } from './resources.js';
import { K8sStatusReporter } from './status.js';

/** Token for the `kubernetes` status reporter. */
export const K8sStatusToken = token<K8sStatusReporter>('K8sStatus');

/** Builds the reporter over every agent resource (which constructs them all) and registers its version probe. */
function newReporter(client: K8sClient, lc: Lifecycle, health: Health, log: Logger, ...resources: AgentResource<K8sObject>[]): K8sStatusReporter {
  const r = new K8sStatusReporter(client, AGENT_RESOURCES.map((spec, i) => ({ ...spec, resource: resources[i] })), health, log);
  r.register(lc);
  return r;
}

/** The k8s-resources cell. */
export const k8sResourcesCell = module(
  'k8s-resources',
  'Kubernetes resources of the agent (Pods of this node, Namespaces, Nodes, Services, EndpointSlices, network policies)',
  ...resourceProviders,
  provide(K8sStatusToken, newReporter, K8sClientToken, LifecycleToken, HealthToken, LoggerToken, ...AGENT_RESOURCES.map((s) => s.token)),
  provideInto(StatusSectionsToken, (r: K8sStatusReporter): StatusSection => ({ key: 'kubernetes', status: () => r.status() }), K8sStatusToken),
);
