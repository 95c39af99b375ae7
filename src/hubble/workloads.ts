/**
 * A pod's workload (flow.Workload: the Deployment, StatefulSet, DaemonSet, CronJob… it belongs
 * to) from its controller owner reference, with Cilium's heuristics (pkg/k8s/utils
 * GetWorkloadMetaFromPod): a ReplicaSet whose name ends in `-<pod-template-hash>` is its
 * Deployment's, a Job whose name ends in `-<digits>` is its CronJob's; any other controller is
 * the workload itself. A pod without a controller has no workload.
 */
import type { Workload } from './gen/flow/flow.js';

/** What of a pod its workload is read from. */
export interface PodOwnerMeta {
  readonly metadata?: {
    readonly labels?: Readonly<Record<string, string>>;
    readonly ownerReferences?: readonly { readonly kind?: string; readonly name?: string; readonly controller?: boolean }[];
  };
}

/** The pod's workloads (none or one). */
export function podWorkloads(pod: PodOwnerMeta | undefined): Workload[] {
  const ctl = pod?.metadata?.ownerReferences?.find((o) => o.controller === true);
  if (!ctl?.kind || !ctl.name) return [];
  if (ctl.kind === 'ReplicaSet') {
    const hash = pod?.metadata?.labels?.['pod-template-hash'];
    if (hash && ctl.name.endsWith(`-${hash}`) && ctl.name.length > hash.length + 1) return [{ kind: 'Deployment', name: ctl.name.slice(0, -(hash.length + 1)) }];
  }
  if (ctl.kind === 'Job') {
    const m = /^(.+)-\d+$/.exec(ctl.name);
    if (m) return [{ kind: 'CronJob', name: m[1]! }];
  }
  return [{ kind: ctl.kind, name: ctl.name }];
}
