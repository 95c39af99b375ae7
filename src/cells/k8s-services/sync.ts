/**
 * Services and EndpointSlices from the apiserver into the service manager (Cilium's
 * pkg/loadbalancer/reflectors: the Kubernetes reflector), through the same translation as
 * `cellium service import` (translateService, translateEndpointSlice). Each Service becomes the
 * service `apiserver:<namespace>/<name>` (source `apiserver`, so the API and imports never change
 * it and it never changes theirs) whose backends are the union of its slices' backends.
 *
 * Until `flush` (the cache-sync gate is open and both resources replayed their caches) events are
 * only recorded: the services restored from the state directory stay exactly as stored. `flush`
 * applies every Service, then deletes the stored apiserver services the apiserver no longer has.
 * Afterwards every event applies at once. A Service labelled `service.kubernetes.io/service-proxy-name`
 * (served by another proxy) or `service.kubernetes.io/headless` (a ClusterIP no proxy serves) is
 * treated as absent (as kube-proxy and Cilium do). An object that cannot be translated keeps its previous
 * version and is reported (an Event on it); a Service the manager refuses (its address taken by
 * another service, a node address) too, and is retried whenever the services change (`retry`).
 */
import {
  LBError, apiserverServiceKey, translateEndpointSlice, translateService,
  type Backend, type K8sEndpointSlice, type K8sService, type Service, type ServiceManager,
} from '../loadbalancer/index.js';
import type { EndpointSlice, LabelledObject, ResourceEvent, Service as K8sServiceObject } from '../k8s/index.js';
import { REASON_INVALID, REASON_NOT_APPLIED, invalidObject, serviceRefused } from './errors.js';

/** The label naming the proxy that serves a Service (Kubernetes' well-known label): set, it is not ours. */
export const SERVICE_PROXY_NAME = 'service.kubernetes.io/service-proxy-name';

/** The label marking a Service headless whatever its clusterIP (Kubernetes' well-known label): set, no proxy serves it. */
export const SERVICE_HEADLESS = 'service.kubernetes.io/headless';

/** True when a Service is labelled for another proxy or headless: this agent serves none of its addresses. */
export function notProxied(svc: LabelledObject): boolean {
  const labels = svc.metadata?.labels;
  return labels?.[SERVICE_PROXY_NAME] !== undefined || labels?.[SERVICE_HEADLESS] !== undefined;
}

/** The kinds this sync reads. */
export type SyncKind = 'Service' | 'EndpointSlice';

/** Reports a problem with an object (the cell creates a Kubernetes Event on it); a rejection makes the next sighting report it again. */
export type ProblemReporter = (kind: SyncKind, object: LabelledObject, reason: string, message: string) => Promise<void> | void;

/** What a flush did. */
export interface FlushResult {
  readonly applied: number;
  readonly deleted: number;
}

type Obj = Record<string, unknown>;

/** A service with no frontends, to check a slice's backends on their own. */
function checkService(key: string): Service {
  return { key, name: '', namespace: '', source: 'apiserver', sessionAffinity: false, sessionAffinityTimeoutSec: 0, extTrafficPolicy: 'Cluster', intTrafficPolicy: 'Cluster', sourceRanges: [] };
}

/** An LBError's message with the object's name (`at`, which the message names already) cut from its field. */
function withoutPrefix(err: LBError, at: string): string {
  const field = err.field.startsWith(at) ? err.field.slice(at.length).trim() : err.field;
  return `${field ? `${field}: ` : ''}${err.problem}; fix: ${err.fix}`;
}

/** The manager's key of the Service `namespace/name`. */
function managerKey(key: string): string {
  const i = key.indexOf('/');
  return apiserverServiceKey(key.slice(0, i), key.slice(i + 1));
}

/** The sync (see the module comment). */
export class K8sServiceSync {
  /** Every Service the apiserver has (namespace/name), valid or not: what is not here is stale. */
  private readonly exists = new Set<string>();
  /** The last valid translation of each Service, with its object. */
  private readonly svcs = new Map<string, { t: K8sService; obj: LabelledObject }>();
  /** The last valid translation of each EndpointSlice, by the slice's namespace/name. */
  private readonly slices = new Map<string, K8sEndpointSlice>();
  /** The slices of each Service (namespace/name of the Service -> slice keys). */
  private readonly slicesOf = new Map<string, Set<string>>();
  /** Objects whose current version cannot be translated ("Service ns/name" -> message). */
  readonly invalid = new Map<string, string>();
  /** Services the manager refused (namespace/name -> message), retried by `retry`. */
  readonly refused = new Map<string, string>();
  /** Problems whose report failed (reported again at their next sighting). */
  private readonly unreported = new Set<string>();
  private isOpen = false;
  private readonly seen = new Set<SyncKind>();
  private replayDone!: () => void;
  /** Settles once both resources sent their `sync` (their caches replayed). */
  readonly replayed = new Promise<void>((r) => (this.replayDone = r));

  constructor(
    private readonly mgr: ServiceManager,
    private readonly report: ProblemReporter,
  ) {}

  /** Whether events apply at once (after `flush`). */
  get open(): boolean {
    return this.isOpen;
  }

  /** How many Services from the apiserver the manager holds. */
  get applied(): number {
    return this.mgr.allServices().filter((s) => s.source === 'apiserver').length;
  }

  /** A Service event. */
  onService(ev: ResourceEvent<K8sServiceObject>): void {
    if (ev.kind === 'sync') return this.synced('Service');
    const key = ev.key;
    // a Service another proxy serves, or labelled headless, is not this agent's (kube-proxy and Cilium skip it too)
    if (ev.kind === 'delete' || notProxied(ev.object)) {
      this.exists.delete(key);
      this.svcs.delete(key);
      this.invalid.delete(`Service ${key}`);
      this.refused.delete(key);
      this.unreported.delete(`Service ${key}`);
      if (this.isOpen) this.mgr.deleteService(managerKey(key));
      return;
    }
    this.exists.add(key);
    let t: K8sService;
    try {
      t = translateService(ev.object as Obj, `Service ${key}`);
    } catch (err) {
      if (!(err instanceof LBError)) throw err;
      this.problem(this.invalid, `Service ${key}`, 'Service', ev.object, REASON_INVALID, invalidObject('Service', key, withoutPrefix(err, `Service ${key}`)));
      return;
    }
    this.invalid.delete(`Service ${key}`);
    this.svcs.set(key, { t, obj: ev.object });
    if (this.isOpen) this.applyService(key);
  }

  /** An EndpointSlice event. */
  onSlice(ev: ResourceEvent<EndpointSlice>): void {
    if (ev.kind === 'sync') return this.synced('EndpointSlice');
    const key = ev.key;
    const old = this.slices.get(key);
    if (ev.kind === 'delete') {
      this.invalid.delete(`EndpointSlice ${key}`);
      this.unreported.delete(`EndpointSlice ${key}`);
      if (!old) return;
      this.unlink(key, old.serviceKey);
      if (this.isOpen) this.refreshBackends(old.serviceKey);
      return;
    }
    let t: K8sEndpointSlice;
    try {
      t = translateEndpointSlice(ev.object as Obj, `EndpointSlice ${key}`);
      // a slice's backends are checked on their own (the agent's API is never a backend), so one
      // bad slice does not hold its Service's other slices back
      this.mgr.check({ service: checkService(managerKey(t.serviceKey)), frontends: [], backends: t.backends });
    } catch (err) {
      if (!(err instanceof LBError)) throw err;
      this.problem(this.invalid, `EndpointSlice ${key}`, 'EndpointSlice', ev.object, REASON_INVALID, invalidObject('EndpointSlice', key, withoutPrefix(err, `EndpointSlice ${key}`)));
      return;
    }
    this.invalid.delete(`EndpointSlice ${key}`);
    if (old && old.serviceKey !== t.serviceKey) {
      this.unlink(key, old.serviceKey);
      if (this.isOpen) this.refreshBackends(old.serviceKey);
    }
    this.slices.set(key, t);
    let set = this.slicesOf.get(t.serviceKey);
    if (!set) this.slicesOf.set(t.serviceKey, (set = new Set()));
    set.add(key);
    if (this.isOpen) this.refreshBackends(t.serviceKey);
  }

  /**
   * Applies what the caches hold over what was restored, and from then on every event at once:
   * every Service (with its slices' backends), then the deletion of the apiserver services the
   * apiserver no longer has (a Service deleted while the agent was down).
   */
  flush(): FlushResult {
    this.isOpen = true;
    let applied = 0;
    for (const key of this.svcs.keys()) if (this.applyService(key)) applied++;
    let deleted = 0;
    for (const s of this.mgr.allServices()) {
      if (s.source !== 'apiserver' || this.exists.has(`${s.namespace}/${s.name}`)) continue;
      if (this.mgr.deleteService(s.key)) deleted++;
    }
    return { applied, deleted };
  }

  /** Applies the refused Services again (the services changed: the address one wanted may be free now). */
  retry(): void {
    if (!this.isOpen) return;
    for (const key of [...this.refused.keys()]) this.applyService(key);
  }

  /** The backends of a Service: the union of its slices'. */
  private backendsOf(key: string): Backend[] {
    const out: Backend[] = [];
    for (const s of this.slicesOf.get(key) ?? []) out.push(...this.slices.get(s)!.backends);
    return out;
  }

  /** Upserts the Service `key` with its backends; false (and reported) when the manager refuses it. */
  private applyService(key: string): boolean {
    const s = this.svcs.get(key);
    if (!s) return false;
    try {
      this.mgr.upsert({ service: { ...s.t.service, key: managerKey(key), source: 'apiserver' }, frontends: s.t.frontends, backends: this.backendsOf(key) });
    } catch (err) {
      if (!(err instanceof LBError)) throw err;
      this.problem(this.refused, key, 'Service', s.obj, REASON_NOT_APPLIED, serviceRefused(key, err.message));
      return false;
    }
    this.refused.delete(key);
    return true;
  }

  /** Gives the Service `key` the backends of its slices now (when the manager has it). */
  private refreshBackends(key: string): void {
    const mk = managerKey(key);
    if (!this.mgr.service(mk)) return;
    try {
      this.mgr.setBackends(mk, this.backendsOf(key));
    } catch (err) {
      if (!(err instanceof LBError)) throw err;
      const s = this.svcs.get(key);
      if (s) this.problem(this.refused, key, 'Service', s.obj, REASON_NOT_APPLIED, serviceRefused(key, err.message));
    }
  }

  private unlink(sliceKey: string, serviceKey: string): void {
    this.slices.delete(sliceKey);
    const set = this.slicesOf.get(serviceKey);
    set?.delete(sliceKey);
    if (set && !set.size) this.slicesOf.delete(serviceKey);
  }

  /** Records a problem and reports it when its message is new or its last report failed (no Event per retry or relist). */
  private problem(where: Map<string, string>, key: string, kind: SyncKind, obj: LabelledObject, reason: string, message: string): void {
    const id = `${kind} ${key}`;
    if (where.get(key) === message && !this.unreported.has(id)) return;
    where.set(key, message);
    this.unreported.delete(id);
    const failed = (): void => {
      if (where.get(key) === message) this.unreported.add(id);
    };
    try {
      void this.report(kind, obj, reason, message)?.catch(failed);
    } catch {
      failed();
    }
  }

  private synced(kind: SyncKind): void {
    this.seen.add(kind);
    if (this.seen.size === 2) this.replayDone();
  }
}
