/**
 * Kubernetes Events about an object the agent could not apply (core/v1 Event, type Warning): the
 * involvedObject is the object, so `kubectl describe` and `kubectl get events` show the field and
 * the fix beside it. A cluster-scoped object's Events go to namespace `default`, as Kubernetes
 * puts them.
 */
import type { K8sClient } from './client.js';
import { apiRequest } from './api-request.js';
import { apiFailed } from './errors.js';
import type { LabelledObject } from './types.js';

/** What an Event is about: the object (apiVersion, kind, metadata) and whether it is cluster-scoped. */
export interface EventSubject {
  readonly object: LabelledObject;
  readonly apiVersion: string;
  readonly kind: string;
  readonly clusterScoped?: boolean;
}

/** How long creating one Event may take. */
const EVENT_TIMEOUT_MS = 10_000;

/** The Event (type Warning) saying `message` with `reason` about `s`, reported by this node's agent. */
export function warningEvent(s: EventSubject, reason: string, message: string, node: string): Record<string, unknown> {
  const m = s.object.metadata ?? {};
  const namespace = s.clusterScoped ? 'default' : m.namespace || 'default';
  const now = new Date().toISOString();
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { generateName: `${m.name ?? s.kind.toLowerCase()}.`, namespace },
    involvedObject: {
      apiVersion: s.apiVersion, kind: s.kind, name: m.name,
      ...(s.clusterScoped ? {} : { namespace }),
      ...(m.uid ? { uid: m.uid } : {}), ...(m.resourceVersion ? { resourceVersion: m.resourceVersion } : {}),
    },
    type: 'Warning',
    reason,
    message: message.slice(0, 1024),
    source: { component: 'cellium-agent', ...(node ? { host: node } : {}) },
    reportingComponent: 'cellium-agent',
    ...(node ? { reportingInstance: node } : {}),
    firstTimestamp: now,
    lastTimestamp: now,
    count: 1,
  };
}

/** Creates `event` (from warningEvent) with the agent's credentials; throws a K8sError when the apiserver refuses it or does not answer. */
export async function createEvent(client: K8sClient, event: Record<string, unknown>): Promise<void> {
  const namespace = (event.metadata as { namespace: string }).namespace;
  const path = `/api/v1/namespaces/${encodeURIComponent(namespace)}/events`;
  const a = await apiRequest(client.kubeConfig(), 'POST', path, event, { timeoutMs: EVENT_TIMEOUT_MS });
  if (a.status !== 201 && a.status !== 200) throw apiFailed(`POST ${path}`, `${a.status}: ${a.message}`);
}
