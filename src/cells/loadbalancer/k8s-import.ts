/**
 * Applies translated Kubernetes manifests to the service manager: each Service with its frontends,
 * and as its backends the union of the EndpointSlices of that service in the same import (or the
 * backends it already has when the import brings no slice of it); slices of services that are not
 * in the import replace those services' backends (waiting for the Service when it is not known yet).
 * All or nothing: the whole import is checked first (import-plan.ts), then applied.
 */
import { formatL3n4 } from './addr.js';
import { planImport } from './import-plan.js';
import type { K8sManifests } from './k8s.js';
import type { Frontend, ServiceManager } from './types.js';

/** What an import did: per service, its frontends with their IDs, and how many backends it has. */
export interface ImportResult {
  readonly services: readonly { readonly service: string; readonly frontends: readonly Frontend[]; readonly backends: number }[];
  /** Slices whose Service is not known (their backends wait for it). */
  readonly pending: readonly string[];
}

/** Applies `m`: everything is checked first (collisions within the import and with what exists included), then applied; throws LBError changing nothing. */
export function applyManifests(mgr: ServiceManager, m: K8sManifests): ImportResult {
  const bySvc = new Map<string, K8sManifests['slices'][number]['backends'][number][]>();
  for (const s of m.slices) bySvc.set(s.serviceKey, [...(bySvc.get(s.serviceKey) ?? []), ...s.backends]);
  const upserts = planImport(
    mgr,
    m.services.map((s) => ({ service: s.service, frontends: s.frontends, backends: bySvc.get(s.service.key) ?? mgr.backends(s.service.key) })),
    bySvc,
  );
  const services: ImportResult['services'][number][] = [];
  for (const u of upserts) {
    const frontends = mgr.upsert(u);
    services.push({ service: u.service.key, frontends, backends: u.backends.length });
  }
  const pending: string[] = [];
  const imported = new Set(upserts.map((u) => u.service.key));
  for (const [key, backends] of bySvc) {
    if (imported.has(key)) continue;
    mgr.setBackends(key, backends);
    if (mgr.service(key)) {
      const ids = mgr.list().filter((f) => f.frontend.serviceKey === key);
      services.push({ service: key, frontends: ids.map((f) => ({ id: f.frontend.id, address: f.frontend.address, type: f.frontend.type, serviceKey: key })), backends: backends.length });
    } else pending.push(key);
  }
  return { services: services.map((s) => ({ ...s, frontends: [...s.frontends].sort((a, b) => a.id - b.id || formatL3n4(a.address).localeCompare(formatL3n4(b.address))) })), pending };
}
