/**
 * Reports an invalid policy object on the object itself: a core/v1 Event (type Warning, reason
 * InvalidPolicy) whose involvedObject is the policy, so `kubectl describe` and `kubectl get events`
 * show the field and the fix. Events of a cluster-scoped CCNP go to namespace `default`, as
 * Kubernetes does for cluster-scoped objects.
 */
import { createEvent, warningEvent, type K8sClient, type LabelledObject } from '../k8s/index.js';
import type { PolicyError } from '../policy/index.js';
import type { InvalidReporter, PolicyKind, PolicyObject } from './reconcile.js';

const API_VERSION: Record<PolicyKind, string> = {
  NetworkPolicy: 'networking.k8s.io/v1',
  CiliumNetworkPolicy: 'cilium.io/v2',
  CiliumClusterwideNetworkPolicy: 'cilium.io/v2',
};

/** The Event reporting `err` on `obj` (also what the unit test checks). */
export function invalidPolicyEvent(kind: PolicyKind, obj: PolicyObject, err: PolicyError, node: string): Record<string, unknown> {
  const subject = { object: obj as LabelledObject, kind, apiVersion: API_VERSION[kind], clusterScoped: kind === 'CiliumClusterwideNetworkPolicy' };
  return warningEvent(subject, 'InvalidPolicy', `not applied (the previous version, if any, stays): ${err.message}`, node);
}

/** A reporter creating Events through the agent's Kubernetes client (a plain create). */
export function eventReporter(client: K8sClient, node: string): InvalidReporter {
  return (kind, obj, err) => createEvent(client, invalidPolicyEvent(kind, obj, err, node));
}

/** How many reported objects `onceReporter` remembers (the oldest is forgotten first). */
export const REPORTED_CAPACITY = 4096;

/**
 * Reports each invalid object version once: the same object (uid, or namespace/name), at the same
 * resourceVersion, with the same error, seen again (a relist after a watch expired, a resync) makes
 * no second Event. A new version, or another error, is reported. A failed report is forgotten, so
 * the next sighting tries again. Remembers the last `capacity` reports.
 */
export function onceReporter(report: InvalidReporter, capacity = REPORTED_CAPACITY): InvalidReporter {
  const seen = new Set<string>();
  return async (kind, obj, err) => {
    const m = obj.metadata ?? {};
    const key = [kind, m.uid ?? `${m.namespace ?? ''}/${m.name ?? ''}`, m.resourceVersion ?? '', err.pointer, err.message].join('\0');
    if (seen.has(key)) return;
    seen.add(key);
    if (seen.size > capacity) seen.delete(seen.values().next().value as string);
    try {
      await report(kind, obj, err);
    } catch (e) {
      seen.delete(key);
      throw e;
    }
  };
}
