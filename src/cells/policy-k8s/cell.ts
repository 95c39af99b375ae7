/**
 * The policy-k8s cell (module `policy-k8s`): in Kubernetes mode, NetworkPolicies,
 * CiliumNetworkPolicies and CiliumClusterwideNetworkPolicies from the apiserver kept in the policy
 * repository, one observer job per kind (`policy-k8s-<resource>`) feeding the gated sync
 * (gated.ts) and a PolicyReconciler per kind (reconcile.ts). Behind the k8s cache-sync gate: the
 * restored policy stays exactly in force until every watched resource has synced and the stored
 * policy is restored; then what the caches hold is applied in one turn (job
 * `policy-k8s-cache-sync`), and changes apply as they come. Invalid objects are reported as
 * Kubernetes Events and keep the job's health degraded, naming them. Without Kubernetes nothing runs.
 */
import { invoke, module, type DepsValues } from '../../hive/cell.js';
import { HealthToken, type Health } from '../../hive/health.js';
import { JobsToken } from '../../hive/jobs.js';
import { LoggerToken } from '../../hive/logger.js';
import {
  CiliumClusterwideNetworkPoliciesToken, CiliumNetworkPoliciesToken, K8sCacheSyncToken, K8sClientToken, K8sConfigToken, NetworkPoliciesToken,
  type AgentResource, type K8sObject, type ResourceEvent,
} from '../k8s/index.js';
import { PolicyRepositoryToken, PolicyRestoreToken } from '../policy/index.js';
import { abortable } from '../../lib/abortable.js';
import { eventReporter, onceReporter } from './events.js';
import { GatedPolicySync, type GatedKind } from './gated.js';
import { PolicyReconciler, type PolicyKind } from './reconcile.js';

/** Says in the job's health which objects of its kind are invalid (not applied), or that all are applied. */
function reportHealth(rec: PolicyReconciler, health: Health): void {
  if (rec.invalid.size === 0) {
    health.ok(`every ${rec.kind} applied`);
    return;
  }
  const list = [...rec.invalid].map(([key, err]) => `${key} (at ${err.pointer || '/'}: ${err.problem})`);
  health.degraded(`invalid ${rec.kind} not applied (previous version kept): ${list.join('; ')}`);
}

const policyDeps = {
  nps: NetworkPoliciesToken, cnps: CiliumNetworkPoliciesToken, ccnps: CiliumClusterwideNetworkPoliciesToken,
  repo: PolicyRepositoryToken, restore: PolicyRestoreToken, gate: K8sCacheSyncToken, client: K8sClientToken, cfg: K8sConfigToken,
  jobs: JobsToken, log: LoggerToken, health: HealthToken,
} as const;

/** Wires the reconcilers of the three kinds behind the cache-sync gate (see the module comment). */
function watchPolicies(d: DepsValues<typeof policyDeps>): void {
  if (!d.client.enabled) {
    d.health.ok('disabled: no --k8s-kubeconfig-path and not in a pod');
    return;
  }
  const report = onceReporter(eventReporter(d.client, d.cfg.k8sNodeName));
  const kinds = new Map<PolicyKind, GatedKind & { resource: AgentResource<K8sObject> }>();
  for (const [kind, resource] of [['NetworkPolicy', d.nps], ['CiliumNetworkPolicy', d.cnps], ['CiliumClusterwideNetworkPolicy', d.ccnps]] as const) {
    if (resource) kinds.set(kind, { rec: new PolicyReconciler(kind, d.repo, d.log, report), exists: (key) => resource.get(key) !== undefined, resource });
  }
  const gated = new GatedPolicySync(kinds, d.repo, d.log);
  const healthOf = new Map<PolicyKind, Health>();
  const release = d.gate.hold('policy-k8s');
  for (const [kind, k] of kinds) {
    // sync: a relist's changes (after an apiserver outage) are applied in the turn they arrive
    d.jobs.observer(`policy-k8s-${k.resource!.name}`, k.resource!.events(), (ev: ResourceEvent<K8sObject>, ctx) => {
      healthOf.set(kind, ctx.health);
      gated.onEvent(kind, ev);
      if (gated.open) reportHealth(k.rec, ctx.health);
      else ctx.health.ok(`waiting for the cache-sync gate (${d.gate.waitingFor().join(', ') || 'every resource synced'}): the restored ${kind} rules stay in force`);
    }, { sync: true });
  }
  d.jobs.oneShot('policy-k8s-cache-sync', async ({ signal }) => {
    await abortable(d.restore.done, signal);
    await abortable(d.gate.synced, signal);
    await abortable(gated.replayed, signal);
    const { applied, deleted } = gated.flush();
    d.log.info({ applied, deleted }, 'Kubernetes policy caches synced: their state applied over the restored policy');
    for (const [kind, h] of healthOf) reportHealth(kinds.get(kind)!.rec, h);
    release();
  });
}

/** The policy-k8s cell. */
export const policyK8sCell = module(
  'policy-k8s',
  'NetworkPolicies and Cilium(Clusterwide)NetworkPolicies from Kubernetes into the policy repository',
  invoke('policy-k8s', watchPolicies, policyDeps),
);
