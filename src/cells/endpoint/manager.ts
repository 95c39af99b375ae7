/**
 * The EndpointManager (Cilium's pkg/endpointmanager): owns every endpoint, allocates their IDs,
 * records their addresses with IPAM, indexes them by id, IPv4, IPv6, container-id, pod-name and
 * cni-attachment-id, and emits created / deleted / restored events. Conflict checks, the IPAM
 * records and indexing happen synchronously in one step, so concurrent creations can never share
 * an ID, an IP or an attachment, and IPAM never hands out an address an endpoint uses.
 */
import { addTo, removeFrom } from '../../lib/multi-index.js';
import { Subject, type Observable } from 'rxjs';
import type { Logger } from '../../hive/index.js';
import { Endpoint, type EndpointOwner } from './endpoint.js';
import { parseEndpointId } from './endpoint-id.js';
import { EndpointError } from './errors.js';
import { EndpointIdAllocator } from './id-allocator.js';
import type { EndpointSpec } from './spec.js';
import type { EndpointManager, EndpointView, RegenerationLevel } from './types.js';

/** Options of a removal. */
export interface RemoveOptions {
  /**
   * Keep the IPs the endpoint took over allocated (Cilium's NoIPRelease: the CNI plugin releases
   * them itself); addresses the endpoint reserved itself are released anyway.
   */
  readonly noIPRelease?: boolean;
}

/** What the manager needs besides the owner role: the endpoint's addresses in IPAM, tearing its datapath state down. */
export interface EndpointRuntime extends EndpointOwner {
  /** Records the endpoint's addresses with IPAM under `id` (all or nothing); throws EndpointError (in use 409, refused 400). */
  claimIPs(ep: Endpoint, id: number): void;
  /** Removes the endpoint's datapath state, identity, state directory and IPs (see RemoveOptions). */
  cleanup(ep: Endpoint, opts: RemoveOptions): Promise<void>;
}

type Index = Map<string, Set<Endpoint>>;

/** The EndpointManager implementation. */
export class EndpointManagerImpl implements EndpointManager {
  private readonly ids: EndpointIdAllocator;
  private readonly byId = new Map<number, Endpoint>();
  private readonly byIPv4 = new Map<string, Endpoint>();
  private readonly byIPv6 = new Map<string, Endpoint>();
  private readonly byCni = new Map<string, Endpoint>();
  /** Host interface name -> endpoint: one endpoint per interface. */
  private readonly byIfName = new Map<string, Endpoint>();
  private readonly byContainer: Index = new Map();
  private readonly byPod: Index = new Map();
  private readonly removing = new Map<Endpoint, Promise<void>>();
  private readonly createdSubject = new Subject<EndpointView>();
  private readonly deletedSubject = new Subject<EndpointView>();
  private readonly restoredSubject = new Subject<EndpointView>();
  /** Emits every endpoint added through addEndpoint. */
  readonly created$: Observable<EndpointView> = this.createdSubject.asObservable();
  /** Emits every endpoint removed. */
  readonly deleted$: Observable<EndpointView> = this.deletedSubject.asObservable();
  /** Emits every endpoint restored from the state directory. */
  readonly restored$: Observable<EndpointView> = this.restoredSubject.asObservable();

  /** Set by the endpoint cell: checks an endpoint's programs in the datapath now (see verifyPrograms). */
  programCheck?: (ep: Endpoint) => Promise<string | undefined>;

  constructor(
    private readonly runtime: EndpointRuntime,
    private readonly log: Logger,
    random?: () => number,
  ) {
    this.ids = new EndpointIdAllocator(random);
  }

  /**
   * Throws EndpointError('exists') naming the clash when `ep` would share an ID, a CNI attachment
   * (container-id + interface), a host interface or an IP with a managed endpoint.
   */
  checkConflicts(ep: Endpoint): void {
    const s = ep.spec;
    if (s.requestedId !== undefined && this.byId.has(s.requestedId)) {
      throw new EndpointError('exists', `endpoint ID ${s.requestedId} already exists`, '/id');
    }
    this.checkInterface(ep, s.ifName);
    const cni = ep.cniAttachmentId;
    const other = cni ? this.byCni.get(cni) : undefined;
    if (other) {
      throw new EndpointError('exists', `container ${s.containerId} interface ${s.containerIfName} already has endpoint ${other.id}`, '/container-id');
    }
    for (const [fam, idx] of [['ipv4', this.byIPv4], ['ipv6', this.byIPv6]] as const) {
      const ip = s[fam];
      const holder = ip ? idx.get(ip) : undefined;
      if (holder) throw new EndpointError('exists', `IP ${ip} is already used by endpoint ${holder.id}`, `/addressing/${fam}`);
    }
  }

  /**
   * Throws EndpointError('exists') when host interface `ifName` belongs to an endpoint other than
   * `ep`: one endpoint per interface, since an interface carries exactly one endpoint's programs.
   */
  checkInterface(ep: Endpoint, ifName: string): void {
    const holder = this.byIfName.get(ifName);
    if (holder && holder !== ep) {
      const who = holder.cniAttachmentId ? ` (CNI attachment ${holder.cniAttachmentId})` : '';
      throw new EndpointError('exists', `host interface ${ifName} already belongs to endpoint ${holder.id}${who}: one endpoint per interface`, '/interface-name');
    }
  }

  /** Applies a new spec to a managed endpoint (PATCH): its host interface may change, never to another endpoint's. */
  updateSpec(ep: Endpoint, next: EndpointSpec): boolean {
    const before = ep.spec.ifName;
    this.checkInterface(ep, next.ifName);
    const changed = ep.updateSpec(next);
    if (before !== ep.spec.ifName && this.byId.get(ep.id) === ep) {
      if (this.byIfName.get(before) === ep) this.byIfName.delete(before);
      this.byIfName.set(ep.spec.ifName, ep);
    }
    return changed;
  }

  /** See EndpointManager: refuses an endpoint whose ID is set; allocates, starts, indexes, emits created. */
  async addEndpoint(view: EndpointView): Promise<void> {
    this.expose(asEndpoint(view));
    this.createdSubject.next(view);
  }

  /** Exposes an endpoint read back from the state directory under its old ID and emits restored. */
  async restoreEndpoint(ep: Endpoint): Promise<void> {
    this.expose(ep);
    this.restoredSubject.next(ep);
  }

  private expose(ep: Endpoint): void {
    if (ep.id !== 0) throw new EndpointError('failed', `endpoint ID is already set to ${ep.id}`, '/id');
    this.checkConflicts(ep);
    const id = ep.spec.requestedId !== undefined ? this.ids.reserve(ep.spec.requestedId) : this.ids.allocate();
    try {
      this.runtime.claimIPs(ep, id);
    } catch (err) {
      this.ids.release(id);
      throw err;
    }
    ep.start(id, this.runtime);
    this.byId.set(id, ep);
    if (ep.ipv4) this.byIPv4.set(ep.ipv4, ep);
    if (ep.ipv6) this.byIPv6.set(ep.ipv6, ep);
    if (ep.cniAttachmentId) this.byCni.set(ep.cniAttachmentId, ep);
    this.byIfName.set(ep.spec.ifName, ep);
    if (ep.containerId) addTo(this.byContainer, ep.containerId, ep);
    if (ep.podName) addTo(this.byPod, ep.podName, ep);
  }

  /** See EndpointManager. Concurrent removals of one endpoint share one teardown. */
  removeEndpoint(view: EndpointView, reason: string, opts: RemoveOptions = {}): Promise<void> {
    const ep = asEndpoint(view);
    const running = this.removing.get(ep);
    if (running) return running;
    if (this.byId.get(ep.id) !== ep) return Promise.reject(new EndpointError('not-found', `endpoint ${ep.id} is not managed`));
    const p = this.teardown(ep, reason, opts).finally(() => this.removing.delete(ep));
    this.removing.set(ep, p);
    return p;
  }

  private async teardown(ep: Endpoint, reason: string, opts: RemoveOptions): Promise<void> {
    await ep.disconnect(reason);
    try {
      await this.runtime.cleanup(ep, opts);
    } catch (err) {
      this.log.warn({ endpointID: ep.id, err: (err as Error).message }, 'endpoint cleanup failed; removing it anyway');
    }
    this.byId.delete(ep.id);
    if (ep.ipv4 && this.byIPv4.get(ep.ipv4) === ep) this.byIPv4.delete(ep.ipv4);
    if (ep.ipv6 && this.byIPv6.get(ep.ipv6) === ep) this.byIPv6.delete(ep.ipv6);
    if (ep.cniAttachmentId && this.byCni.get(ep.cniAttachmentId) === ep) this.byCni.delete(ep.cniAttachmentId);
    if (this.byIfName.get(ep.spec.ifName) === ep) this.byIfName.delete(ep.spec.ifName);
    if (ep.containerId) removeFrom(this.byContainer, ep.containerId, ep);
    if (ep.podName) removeFrom(this.byPod, ep.podName, ep);
    this.ids.release(ep.id);
    ep.setState('disconnected', 'Endpoint removed');
    this.log.info({ endpointID: ep.id, reason }, 'endpoint removed');
    this.deletedSubject.next(ep);
  }

  /** See EndpointManager. */
  lookup(id: string): Endpoint | undefined {
    const { prefix, value } = parseEndpointId(id);
    switch (prefix) {
      case 'cilium-local':
        return this.byId.get(Number(value));
      case 'ipv4':
        return this.byIPv4.get(value);
      case 'ipv6':
        return this.byIPv6.get(value);
      case 'cni-attachment-id':
        return this.byCni.get(value);
      case 'container-id':
        return first(this.byContainer.get(value));
      case 'pod-name':
        return first(this.byPod.get(value));
      case 'container-name':
        return this.list().find((ep) => ep.spec.containerName === value);
    }
  }

  /** Every endpoint of a container (one per interface). */
  lookupContainer(containerId: string): Endpoint[] {
    return [...(this.byContainer.get(containerId) ?? [])].sort((a, b) => a.id - b.id);
  }

  /** Every endpoint, by id. */
  list(): Endpoint[] {
    return [...this.byId.values()].sort((a, b) => a.id - b.id);
  }

  /** See EndpointManager. */
  getEndpoints(): EndpointView[] {
    return this.list();
  }

  /** Endpoints whose identity is in `ids` (every endpoint for 'all'). */
  withIdentities(ids: ReadonlySet<number> | 'all'): Endpoint[] {
    return this.list().filter((ep) => ids === 'all' || (ep.identity !== undefined && ids.has(ep.identity)));
  }

  /** Regenerates `eps` (default: all); throws EndpointError listing the failures once all have settled. */
  /** See EndpointManager. */
  async verifyPrograms(id: number): Promise<string | undefined> {
    const ep = this.byId.get(id);
    return ep && this.programCheck ? this.programCheck(ep) : undefined;
  }

  async regenerateAll(reason: string, level: RegenerationLevel = 'no-rebuild', eps: readonly Endpoint[] = this.list()): Promise<void> {
    const results = await Promise.allSettled(eps.map((ep) => ep.regenerate(reason, level)));
    const failed = results.flatMap((r, i) => (r.status === 'rejected' && !eps[i]!.signal.aborted ? [`${eps[i]!.id}: ${(r.reason as Error).message}`] : []));
    if (failed.length) throw new EndpointError('failed', `regeneration (${reason}) failed for ${failed.length} endpoint(s): ${failed.join('; ')}`);
  }

  /** How many endpoints are managed. */
  get size(): number {
    return this.byId.size;
  }

  /** Completes the event streams (hive stop). */
  close(): void {
    this.createdSubject.complete();
    this.deletedSubject.complete();
    this.restoredSubject.complete();
  }
}

/** The endpoint behind a view; the manager only manages endpoints of this cell. */
export function asEndpoint(view: EndpointView): Endpoint {
  if (!(view instanceof Endpoint)) throw new EndpointError('failed', 'not an endpoint created by the endpoint cell (use EndpointCreator)');
  return view;
}

function first(set: Set<Endpoint> | undefined): Endpoint | undefined {
  if (!set) return undefined;
  let best: Endpoint | undefined;
  for (const ep of set) if (!best || ep.id < best.id) best = ep;
  return best;
}
