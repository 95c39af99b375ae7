/**
 * The policy-k8s cell (module `policy-k8s`): in Kubernetes mode, NetworkPolicies,
 * CiliumNetworkPolicies and CiliumClusterwideNetworkPolicies from the apiserver kept in the policy
 * repository, one observer job per kind (`policy-k8s-<resource>`) feeding a PolicyReconciler
 * (reconcile.ts). Each job first waits for the stored policy to be restored (the repository's
 * restore needs it empty), then gets the cached objects, `sync`, and every change. Invalid objects
 * are reported as Kubernetes Events and keep the job's health degraded, naming them.
 * Without Kubernetes nothing runs.
 */
import { invoke, module } from '../../hive/cell.js';
import { JobsToken, type Jobs } from '../../hive/jobs.js';
import { LoggerToken, type Logger } from '../../hive/logger.js';
import {
  CiliumClusterwideNetworkPoliciesToken, CiliumNetworkPoliciesToken, K8sClientToken, K8sConfigToken, NetworkPoliciesToken,
  type AgentResource, type CiliumNetworkPolicy, type K8sClient, type K8sConfig, type K8sObject, type NetworkPolicy, type ResourceEvent,
} from '../k8s/index.js';
import { PolicyRepositoryToken, PolicyRestoreToken, type PolicyRepository, type PolicyRestore } from '../policy/index.js';
import { eventReporter } from './events.js';
import { PolicyReconciler, type InvalidReporter, type PolicyKind } from './reconcile.js';
import { HealthToken, type Health } from '../../hive/health.js';

/** Says in the job's health which objects of its kind are invalid (not applied), or that all are applied. */
function reportHealth(rec: PolicyReconciler, health: Health): void {
  if (rec.invalid.size === 0) {
    health.ok(`every ${rec.kind} applied`);
    return;
  }
  const list = [...rec.invalid].map(([key, err]) => `${key} (at ${err.pointer || '/'}: ${err.problem})`);
  health.degraded(`invalid ${rec.kind} not applied (previous version kept): ${list.join('; ')}`);
}

/** Runs the reconciler of one kind as an observer job of its resource's events. */
function watchKind(
  jobs: Jobs, kind: PolicyKind, resource: AgentResource<K8sObject>, repo: PolicyRepository, restore: PolicyRestore, log: Logger, report: InvalidReporter,
): void {
  if (!resource) return;
  const rec = new PolicyReconciler(kind, repo, log, report);
  jobs.observer(`policy-k8s-${resource.name}`, resource.events(), async (ev: ResourceEvent<K8sObject>, ctx) => {
    await restore.done;
    const store = ev.kind === 'sync' ? await resource.store() : undefined;
    await rec.handle(ev, (key) => store?.get(key) !== undefined);
    reportHealth(rec, ctx.health);
  });
}

/** The policy-k8s cell. */
export const policyK8sCell = module(
  'policy-k8s',
  'NetworkPolicies and Cilium(Clusterwide)NetworkPolicies from Kubernetes into the policy repository',
  invoke('policy-k8s', (
    nps: AgentResource<NetworkPolicy>, cnps: AgentResource<CiliumNetworkPolicy>, ccnps: AgentResource<CiliumNetworkPolicy>,
    repo: PolicyRepository, restore: PolicyRestore, client: K8sClient, cfg: K8sConfig, jobs: Jobs, log: Logger, health: Health,
  ) => {
    if (!client.enabled) {
      health.ok('disabled: no --k8s-kubeconfig-path and not in a pod');
      return;
    }
    const report = eventReporter(client, cfg.k8sNodeName);
    watchKind(jobs, 'NetworkPolicy', nps, repo, restore, log, report);
    watchKind(jobs, 'CiliumNetworkPolicy', cnps, repo, restore, log, report);
    watchKind(jobs, 'CiliumClusterwideNetworkPolicy', ccnps, repo, restore, log, report);
  }, NetworkPoliciesToken, CiliumNetworkPoliciesToken, CiliumClusterwideNetworkPoliciesToken,
  PolicyRepositoryToken, PolicyRestoreToken, K8sClientToken, K8sConfigToken, JobsToken, LoggerToken, HealthToken),
);
