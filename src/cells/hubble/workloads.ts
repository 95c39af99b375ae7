/**
 * Which workload a local pod belongs to, for the workloads of flows: the k8s cell's store of this
 * node's pods (their controller owner references, src/hubble/workloads.ts), each pod object's
 * answer kept until the store replaces the object. Without Kubernetes there are none.
 */
import { podWorkloads, type flowpb, type PodOwnerMeta } from '../../hubble/index.js';
import type { AgentResource, Pod } from '../k8s/index.js';
import type { WorkloadLookup } from './observer.js';

/** The answer for a pod without workloads (one array for all: flows share it and never change it). */
const NONE: flowpb.Workload[] = [];

/** A lookup of workloads in the store of local pods (undefined: Kubernetes is off). */
export function podWorkloadLookup(pods: AgentResource<Pod>): WorkloadLookup {
  if (!pods) return () => NONE;
  const known = new WeakMap<object, flowpb.Workload[]>();
  return (namespace, pod) => {
    const obj = pods.get(pod.includes('/') ? pod : `${namespace}/${pod}`);
    if (!obj) return NONE;
    let w = known.get(obj);
    if (!w) known.set(obj, (w = podWorkloads(obj as PodOwnerMeta)));
    return w;
  };
}
