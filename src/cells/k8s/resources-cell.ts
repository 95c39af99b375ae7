/**
 * The k8s-resources cell (module `k8s-resources`): the agent's resources (resources.ts), each in
 * the health tree under its name, the `kubernetes` status line (status.ts), the cache-sync gate
 * (cache-sync.ts) and the Cilium CRDs registered at start (crd-registrar.ts; not with
 * --skip-crd-creation).
 */
import { invoke, module, provide, provideInto, type DepsValues } from '../../hive/cell.js';
import { HealthToken } from '../../hive/health.js';
import { LifecycleToken } from '../../hive/lifecycle.js';
import { LoggerToken } from '../../hive/logger.js';
import { token, type Token } from '../../hive/token.js';
import { StatusSectionsToken, type StatusSection } from '../agent-status/index.js';
import { CacheSyncGate } from './cache-sync.js';
import { K8sClientToken } from './cell.js';
import { K8sConfigToken } from './config.js';
import { registerCrds, type CrdRegistration } from './crd-registrar.js';
import type { K8sObject } from './resource.js';
import { AGENT_RESOURCES, resourceProviders, type AgentResource } from './resources.js';
import { K8sStatusReporter } from './status.js';

/** Token for the `kubernetes` status reporter. */
export const K8sStatusToken = token<K8sStatusReporter>('K8sStatus');
/** Token for the cache-sync gate (every watched resource synced; see cache-sync.ts). */
export const K8sCacheSyncToken = token<CacheSyncGate>('K8sCacheSync');

/** Every agent resource's token, by its name (a provider depending on them constructs them all). */
const resourceDeps: Readonly<Record<string, Token<AgentResource<K8sObject>>>> = Object.fromEntries(AGENT_RESOURCES.map((s) => [s.name, s.token]));

/** The agent resources in status order, with their specs, from a deps object holding each under its name. */
function withSpecs(d: Readonly<Record<string, unknown>>): { name: string; apiVersion: string; kind: string; resource: AgentResource<K8sObject> }[] {
  return AGENT_RESOURCES.map((spec) => ({ ...spec, resource: d[spec.name] as AgentResource<K8sObject> }));
}

const reporterDeps = { ...resourceDeps, client: K8sClientToken, lc: LifecycleToken, health: HealthToken, log: LoggerToken } as const;

/** Builds the reporter over every agent resource and registers its version probe. */
function newReporter(d: DepsValues<typeof reporterDeps>): K8sStatusReporter {
  const r = new K8sStatusReporter(d.client, withSpecs(d), d.health, d.log);
  r.register(d.lc);
  return r;
}

const gateDeps = { ...resourceDeps, health: HealthToken } as const;

/** Builds the cache-sync gate over every agent resource (health node `cache-sync`). */
function newGate(d: DepsValues<typeof gateDeps>): CacheSyncGate {
  return new CacheSyncGate(withSpecs(d), d.health.scope('cache-sync'));
}

/** Token for the CRD registration (its start hook runs before the hooks of whoever depends on it). */
export const K8sCrdsToken = token<CrdRegistration>('K8sCrds');

/** The k8s-resources cell. */
export const k8sResourcesCell = module(
  'k8s-resources',
  'Kubernetes resources of the agent (Pods of this node, Namespaces, Nodes, Services, EndpointSlices, network policies)',
  ...resourceProviders,
  provide(K8sStatusToken, newReporter, reporterDeps),
  provide(K8sCacheSyncToken, newGate, gateDeps),
  provide(K8sCrdsToken, registerCrds, { client: K8sClientToken, cfg: K8sConfigToken, lc: LifecycleToken, health: HealthToken, log: LoggerToken }),
  invoke('k8s-crds', (_r: CrdRegistration) => undefined, K8sCrdsToken),
  provideInto(StatusSectionsToken, (r: K8sStatusReporter): StatusSection => ({ key: 'kubernetes', status: () => r.status() }), K8sStatusToken),
);
