/**
 * The plan of an import (several services and slices in one request), checked whole before
 * anything is applied, so an import is all or nothing: every service and every slice's backends
 * pass the manager's check; no frontend address is claimed by two services once the import is
 * done (two of the import, or one of the import and one that stays); the service IDs the new
 * frontends need are free; and the services are ordered so that one giving up an address is
 * applied before the one taking it (an address moving between services of one import).
 */
import { formatL3n4 } from './addr.js';
import { idsExhausted, invalidFrontend } from './errors.js';
import type { Backend, Service, ServiceManager, ServiceUpsert } from './types.js';

/** A service with no frontends, to check the backends of a slice whose Service is not known yet. */
function waitingService(key: string): Service {
  return { key, name: '', namespace: '', source: 'k8s', sessionAffinity: false, sessionAffinityTimeoutSec: 0, extTrafficPolicy: 'Cluster', intTrafficPolicy: 'Cluster', sourceRanges: [] };
}

/**
 * Checks `upserts` (one per service key: a later one of the same key replaces an earlier) and the
 * backends of slices of services not in them (`slices`, by service key) against `mgr` as it is;
 * returns the upserts in the order to apply them. Throws LBError naming the service and the
 * address, changing nothing.
 */
export function planImport(mgr: ServiceManager, upserts: readonly ServiceUpsert[], slices: ReadonlyMap<string, readonly Backend[]>): ServiceUpsert[] {
  const byKey = new Map<string, ServiceUpsert>();
  for (const u of upserts) {
    byKey.delete(u.service.key);
    byKey.set(u.service.key, u);
  }
  for (const u of byKey.values()) mgr.check(u);
  for (const [key, backends] of slices) {
    if (!byKey.has(key)) mgr.check({ service: mgr.service(key) ?? waitingService(key), frontends: [], backends });
  }
  // who holds each address now, and who will once the import is done
  const holder = new Map<string, string>();
  for (const s of mgr.list()) holder.set(formatL3n4(s.frontend.address), s.frontend.serviceKey);
  const after = new Map<string, string>();
  for (const [addr, key] of holder) if (!byKey.has(key)) after.set(addr, key);
  let fresh = 0;
  for (const u of byKey.values()) {
    for (const [i, f] of u.frontends.entries()) {
      const addr = formatL3n4(f.address);
      const other = after.get(addr);
      if (other !== undefined && other !== u.service.key) {
        const whose = byKey.has(other) ? `${other}, also in this import` : describeHolder(other);
        throw invalidFrontend(`service ${u.service.key} /frontends/${i}/address`, `${addr} is already a frontend of ${whose}`, 'give the Service another address or port, or delete the other service first; nothing of this import was applied');
      }
      after.set(addr, u.service.key);
      if (!holder.has(addr)) fresh++;
    }
  }
  if (holder.size + fresh > mgr.maxId) throw idsExhausted(mgr.maxId);
  return applyOrder(byKey, holder);
}

/** Who holds an address, for an error: an API service by its ID, a Service of the apiserver by name. */
function describeHolder(key: string): string {
  if (key.startsWith('api:')) return `${key} (service ${key.slice(4)})`;
  if (key.startsWith('apiserver:')) return `the Kubernetes Service ${key.slice('apiserver:'.length)} (watched from the apiserver)`;
  return key;
}

/**
 * The upserts ordered so that a service taking an address another one of the import holds now
 * comes after it (which gives the address up); a cycle (two services swapping addresses) cannot be
 * applied one service at a time and is refused.
 */
function applyOrder(byKey: ReadonlyMap<string, ServiceUpsert>, holder: ReadonlyMap<string, string>): ServiceUpsert[] {
  const out: ServiceUpsert[] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (u: ServiceUpsert, path: readonly string[]): void => {
    const key = u.service.key;
    if (state.get(key) === 'done') return;
    if (state.get(key) === 'visiting') {
      throw invalidFrontend(`service ${key}`, `the services ${[...path.slice(path.indexOf(key)), key].join(' -> ')} take each other's addresses`, 'move the addresses in two imports: first give them up, then take them');
    }
    state.set(key, 'visiting');
    for (const f of u.frontends) {
      const now = holder.get(formatL3n4(f.address));
      const before = now !== undefined && now !== key ? byKey.get(now) : undefined;
      if (before) visit(before, [...path, key]);
    }
    state.set(key, 'done');
    out.push(u);
  };
  for (const u of byKey.values()) visit(u, []);
  return out;
}
