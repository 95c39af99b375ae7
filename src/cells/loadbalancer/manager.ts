/**
 * The service manager (Cilium's loadbalancer Writer): services, their frontends (each with a
 * service ID, kept across restarts through the store) and backends. Every change recomputes the
 * desired state of the affected frontends in one DesiredTable, keyed by the frontend address; the
 * LB reconciler writes that table into the LB maps and records each frontend's status.
 */
import { Subject, type Observable } from 'rxjs';
import { DesiredTable, type TableStatus } from '../../lib/reconciler/index.js';
import { formatL3n4, isIPv6 } from './addr.js';
import { idsExhausted, invalidFrontend, ownedByApiserver } from './errors.js';
import type { ServiceStore, StoredService } from './store.js';
import { DEFAULT_NODE_PORT_RANGE, type NodePortRange } from './config.js';
import type { Backend, Frontend, FrontendDesired, FrontendStatus, Service, ServiceManager, ServiceUpsert } from './types.js';
import { validateBackends, validateUpsert } from './validate.js';
import { checkBackendCollisions, checkCollisions, whyDisabled } from './collisions.js';
import type { NodeAddressCheck } from './node-addrs.js';

/** Options of the service manager beyond its IDs, store and node ports. */
export interface ServiceManagerOptions {
  /** The node's own addresses: no frontend but NodePort takes one, no backend is the agent's API (their changes go to `recheck`). */
  readonly addrs?: NodeAddressCheck;
  /** Told when a frontend is disabled (`why`) or enabled again (`why` undefined). */
  readonly onDisabled?: (frontend: Frontend, why: string | undefined) => void;
}

/** The key of an API service with this ID. */
export function apiServiceKey(id: number): string {
  return `api:${id}`;
}

/** The key of a Service watched from the Kubernetes apiserver (source `apiserver`). */
export function apiserverServiceKey(namespace: string, name: string): string {
  return `apiserver:${namespace}/${name}`;
}

/** The service manager. */
export class LBServiceManager implements ServiceManager {
  /** Desired state of every frontend, keyed by its address (formatL3n4). */
  readonly frontends = new DesiredTable<FrontendDesired>('lb-frontends', (a, b) => a === b || JSON.stringify(a) === JSON.stringify(b));
  private readonly services = new Map<string, Service>();
  private readonly svcFrontends = new Map<string, Map<string, Frontend>>();
  private readonly svcBackends = new Map<string, readonly Backend[]>();
  private readonly byId = new Map<number, Frontend>();
  private readonly byAddr = new Map<string, Frontend>();
  /** Frontends kept out of the LB maps (their address or a backend collides with the node), by address. */
  private readonly parked = new Map<string, { value: FrontendDesired; why: string }>();
  private nextId = 1;
  private readonly subject = new Subject<string>();
  /** Emits the key of every service that changed. */
  readonly changes$: Observable<string> = this.subject.asObservable();

  constructor(
    /** The highest service ID (IDs are 1..maxId; Cilium's rev-NAT index is 16 bits). */
    readonly maxId = 65535,
    private readonly store?: ServiceStore,
    /** --node-port-range: the ports NodePort surrogates may use. */
    private readonly nodePorts: NodePortRange = DEFAULT_NODE_PORT_RANGE,
    private readonly opts: ServiceManagerOptions = {},
  ) {}

  /** See ServiceManager. */
  check(u: ServiceUpsert): void {
    validateUpsert(u, this.nodePorts);
    checkCollisions(this.opts.addrs, u);
  }

  /** Loads the store (before anything else changes the services). */
  async restore(): Promise<number> {
    const stored = (await this.store?.load()) ?? [];
    for (const s of stored) {
      this.apply({ service: s.service, frontends: s.frontends, backends: s.backends }, new Map(s.frontends.map((f) => [formatL3n4(f.address), f.id])));
    }
    return stored.length;
  }

  upsert(u: ServiceUpsert): Frontend[] {
    this.check(u);
    return this.apply(u, new Map());
  }

  upsertById(id: number, u: ServiceUpsert): boolean {
    this.check(u);
    if (u.frontends.length !== 1) throw invalidFrontend('/frontends', `a service ID has one frontend, got ${u.frontends.length}`, 'give exactly one frontend address');
    const key = formatL3n4(u.frontends[0]!.address);
    const other = this.byAddr.get(key);
    if (other && other.id !== id) throw invalidFrontend('/frontends/0/address', `${key} is already the frontend of service ${other.id}`, `update service ${other.id} instead, or delete it first`);
    const created = !this.byId.has(id);
    const prev = this.byId.get(id);
    if (prev) this.refuseApiserverOwned(prev, '');
    if (prev && prev.serviceKey !== u.service.key) this.deleteById(id);
    this.apply(u, new Map([[key, id]]));
    return created;
  }

  setBackends(serviceKey: string, backends: readonly Backend[]): void {
    const svc = this.services.get(serviceKey);
    if (!svc) {
      // backends that arrive before their service (an EndpointSlice first) wait for it
      validateBackends(backends, []);
      checkBackendCollisions(this.opts.addrs, backends);
      this.svcBackends.set(serviceKey, dedupe(backends).backends);
      return;
    }
    validateBackends(backends, []);
    checkBackendCollisions(this.opts.addrs, backends);
    this.apply({ service: svc, frontends: [...(this.svcFrontends.get(serviceKey)?.values() ?? [])], backends }, new Map());
  }

  deleteService(serviceKey: string): boolean {
    const had = this.services.delete(serviceKey);
    for (const f of this.svcFrontends.get(serviceKey)?.values() ?? []) this.dropFrontend(f);
    this.svcFrontends.delete(serviceKey);
    this.svcBackends.delete(serviceKey);
    if (had) this.changed(serviceKey);
    return had;
  }

  deleteById(id: number): boolean {
    const f = this.byId.get(id);
    if (!f) return false;
    this.refuseApiserverOwned(f, '');
    const fes = this.svcFrontends.get(f.serviceKey);
    if (!fes || fes.size <= 1) return this.deleteService(f.serviceKey);
    fes.delete(formatL3n4(f.address));
    this.dropFrontend(f);
    this.changed(f.serviceKey);
    return true;
  }

  /** Throws when `f` belongs to a Service of the apiserver: only its watcher changes it (the API and imports may not). */
  private refuseApiserverOwned(f: Frontend, field: string): void {
    if (this.services.get(f.serviceKey)?.source === 'apiserver') throw ownedByApiserver(field, f.id, f.serviceKey);
  }

  list(): FrontendStatus[] {
    return [...this.byId.keys()].sort((a, b) => a - b).map((id) => this.get(id)!);
  }

  get(id: number): FrontendStatus | undefined {
    const f = this.byId.get(id);
    if (!f) return undefined;
    const addrKey = formatL3n4(f.address);
    const p = this.parked.get(addrKey);
    if (p) return { frontend: p.value, state: 'disabled', message: p.why };
    const o = this.frontends.get(addrKey);
    return o && { frontend: o.value, state: o.state, ...(o.message ? { message: o.message } : {}) };
  }

  disabled(): { readonly frontend: string; readonly why: string }[] {
    return [...this.parked].map(([frontend, p]) => ({ frontend, why: p.why }));
  }

  /**
   * Checks every frontend against the node's addresses again (they changed: the loadbalancer cell's
   * observer job `node-address-changes` calls it inside `changes$`'s `next`): one that collides now
   * leaves the LB maps (disabled, with why), one that no longer does is written again.
   */
  recheck(): void {
    for (const [addrKey, fe] of this.byAddr) {
      const p = this.parked.get(addrKey);
      const value = p?.value ?? this.frontends.get(addrKey)?.value;
      if (!value) continue;
      const why = whyDisabled(this.opts.addrs, value);
      if (why === p?.why) continue;
      this.place(addrKey, value, why);
      if (!p || !why) this.opts.onDisabled?.(fe, why);
    }
  }

  /** Puts a frontend's desired state in the table, or keeps it out (disabled) when `why`. */
  private place(addrKey: string, value: FrontendDesired, why: string | undefined): void {
    if (why) {
      this.frontends.delete(addrKey);
      this.parked.set(addrKey, { value, why });
    } else {
      this.parked.delete(addrKey);
      this.frontends.upsert(addrKey, value);
    }
  }

  service(key: string): Service | undefined {
    return this.services.get(key);
  }

  allServices(): Service[] {
    return [...this.services.values()];
  }

  backends(serviceKey: string): readonly Backend[] {
    return this.svcBackends.get(serviceKey) ?? [];
  }

  status(): TableStatus {
    return this.frontends.status();
  }

  async flushStore(): Promise<void> {
    await this.store?.flush();
  }

  /** Everything, as the store keeps it. */
  snapshot(): StoredService[] {
    return [...this.services.values()].map((service) => ({
      service,
      frontends: [...(this.svcFrontends.get(service.key)?.values() ?? [])],
      backends: this.backends(service.key),
    }));
  }

  /** Applies a validated upsert; `ids` pins the IDs of some frontend addresses. */
  private apply(u: ServiceUpsert, ids: ReadonlyMap<string, number>): Frontend[] {
    const key = u.service.key;
    for (const [i, f] of u.frontends.entries()) {
      const other = this.byAddr.get(formatL3n4(f.address));
      if (other && other.serviceKey !== key) {
        throw invalidFrontend(`/frontends/${i}/address`, `${formatL3n4(f.address)} is already a frontend of ${other.serviceKey} (service ${other.id})`, 'give the service another address, or delete the other service first');
      }
    }
    const old = this.svcFrontends.get(key) ?? new Map<string, Frontend>();
    const next = new Map<string, Frontend>();
    for (const f of u.frontends) {
      const addrKey = formatL3n4(f.address);
      const id = ids.get(addrKey) ?? old.get(addrKey)?.id ?? this.allocateId();
      const fe: Frontend = { address: f.address, type: f.type, ...(f.portName !== undefined ? { portName: f.portName } : {}), id, serviceKey: key };
      next.set(addrKey, fe);
      this.byId.set(id, fe);
      this.byAddr.set(addrKey, fe);
    }
    for (const [addrKey, f] of old) if (!next.has(addrKey)) this.dropFrontend(f);
    this.services.set(key, u.service);
    this.svcFrontends.set(key, next);
    const { backends, keys } = dedupe(u.backends);
    this.svcBackends.set(key, backends);
    const sorted = sortedByAddress(backends, keys);
    for (const [addrKey, fe] of next) {
      const value = this.desired(u.service, fe, sorted);
      const why = whyDisabled(this.opts.addrs, value);
      const was = this.parked.get(addrKey)?.why;
      this.place(addrKey, value, why);
      if (why !== was && (!why || !was)) this.opts.onDisabled?.(fe, why);
    }
    this.changed(key);
    return [...next.values()];
  }

  /** The desired state of frontend `fe` of `svc`, whose backends are `sorted` (by address). */
  private desired(svc: Service, fe: Frontend, sorted: readonly Backend[]): FrontendDesired {
    const v6 = isIPv6(fe.address.ip);
    const backends = sorted.filter((b) => isIPv6(b.address.ip) === v6 && (fe.portName === undefined || b.portName === undefined || b.portName === fe.portName));
    return {
      id: fe.id,
      address: fe.address,
      type: fe.type,
      serviceKey: svc.key,
      affinityTimeoutSec: svc.sessionAffinity ? svc.sessionAffinityTimeoutSec : 0,
      extTrafficPolicy: svc.extTrafficPolicy,
      intTrafficPolicy: svc.intTrafficPolicy,
      sourceRanges: svc.sourceRanges,
      backends,
    };
  }

  private dropFrontend(f: Frontend): void {
    const addrKey = formatL3n4(f.address);
    if (this.byId.get(f.id) === f) this.byId.delete(f.id);
    if (this.byAddr.get(addrKey) === f) {
      this.byAddr.delete(addrKey);
      this.frontends.delete(addrKey);
      this.parked.delete(addrKey);
    }
  }

  private allocateId(): number {
    for (let n = 0; n < this.maxId; n++) {
      const id = ((this.nextId - 1 + n) % this.maxId) + 1;
      if (!this.byId.has(id)) {
        this.nextId = (id % this.maxId) + 1;
        return id;
      }
    }
    throw idsExhausted(this.maxId);
  }

  private changed(key: string): void {
    this.store?.saveLater(() => this.snapshot());
    this.subject.next(key);
  }
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * One backend per address+port name (the last one given wins, in the place of the first), with
 * each one's address as formatL3n4 text.
 */
function dedupe(bs: readonly Backend[]): { backends: Backend[]; keys: string[] } {
  const at = new Map<string, number>();
  const backends: Backend[] = [];
  const keys: string[] = [];
  for (const b of bs) {
    const addrKey = formatL3n4(b.address);
    // formatL3n4 text has no '|': the address alone stands for "no port name"
    const k = b.portName ? `${addrKey}|${b.portName}` : addrKey;
    const i = at.get(k);
    if (i !== undefined) {
      backends[i] = b;
      continue;
    }
    at.set(k, backends.length);
    backends.push(b);
    keys.push(addrKey);
  }
  return { backends, keys };
}

/** The backends sorted by their addresses' text `keys` (stable: equal addresses keep their order). */
function sortedByAddress(backends: readonly Backend[], keys: readonly string[]): Backend[] {
  const order = keys.map((_, i) => i).sort((a, b) => cmp(keys[a]!, keys[b]!) || a - b);
  return order.map((i) => backends[i]!);
}
