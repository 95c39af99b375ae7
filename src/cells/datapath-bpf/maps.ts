/**
 * BpfMaps: the DatapathMaps of the BPF datapath. Regeneration sets the desired state (lxc entries,
 * ipcache entries, each endpoint's policy map state); it lands in desired-state tables with a
 * status per object, and one reconciler per table writes the changes to the kernel incrementally
 * and in batches, retries failures with backoff, and prunes/repairs the kernel maps periodically.
 * `flush()` waits for the writes and reports the objects whose write failed (an endpoint's, or all
 * of them); `list()`/`get()` read the kernel's contents with each table's status.
 */
import { DesiredTable, Reconciler, type ReconcilerStats, type TableStatus } from '../../lib/reconciler/index.js';
import { DROP_REASONS, type IPCacheValue, type LxcValue } from '../../maps/index.js';
import { IPCACHE_MAP, LXC_MAP, endpointOfPolicyMap, policyMapName } from '../../datapath/map-names.js';
import { expandPolicyCached, type PolicyLpmEntry } from '../../maps/policy/key.js';
import { dumpIPCache, dumpLxc, dumpMetrics, dumpPolicy, policyStatus, tableStatus } from './dumps.js';
import type { DatapathMaps, IPCacheEntry, LxcEntry, MapDump, MapSummary, PolicyEntry } from '../../datapath/types.js';
import type { Jobs } from '../../hive/jobs.js';
import type { KernelMaps } from './kernel-maps.js';
import { PolicyGroups } from './policy-groups.js';
import { sharedPolicyOps } from './shared-policy-ops.js';
import { hostCidrKey, ipcacheKey, ipcacheOps, lxcKey, lxcOps, lxcValue, policyObjectKey, policyOps, samePolicy, type PolicyObject, type WrittenPolicy } from './tables.js';

/** The tables, in the order of the reconcilers. */
const TABLE_NAMES = [LXC_MAP, IPCACHE_MAP, 'cellium_policy'] as const;

/** The metrics map (drop counters by reason), listed with the others. */
export const METRICS_MAP_NAME = 'cellium_metrics';

/** Reconciler timing (see ReconcilerOptions); pruning is driven by the owner through prune(). */
export interface BpfMapsOptions {
  readonly retryMinMs?: number;
  readonly retryMaxMs?: number;
  /** Called for every failed write (logging). */
  readonly onError?: (table: string, key: string, err: Error) => void;
  /** Called with an endpoint's addresses when its entries are deleted (conntrack scrub). */
  readonly onEndpointDeleted?: (ips: readonly string[]) => void;
  /**
   * Endpoints with the same policy share one policy map (PolicyGroups; the shared bpf_lxc, whose
   * slots can point at any map). Otherwise each endpoint's map is its own.
   */
  readonly sharedPolicyMaps?: boolean;
}

/** What BpfMaps does with a reconciler, whatever its table's value type. */
type TableWriter = Pick<Reconciler<unknown>, 'start' | 'stop' | 'flush' | 'prune' | 'stats' | 'run'>;

/** Status and counters of one table, for the status API. */
export interface BpfTableReport extends TableStatus {
  readonly reconciler: ReconcilerStats;
}

/** The BPF datapath's maps. */
export class BpfMaps implements DatapathMaps {
  readonly lxcTable = new DesiredTable<LxcValue>(LXC_MAP);
  readonly ipcacheTable = new DesiredTable<IPCacheValue>(IPCACHE_MAP);
  /** One object per endpoint: its policy map's entries (a shared expansion). */
  readonly policyTable = new DesiredTable<PolicyObject>('cellium_policy', samePolicy);
  private readonly reconcilers: readonly TableWriter[];
  private asJobs = false;
  private readonly lxcKeys = new Map<number, string[]>();
  private readonly policyErrors = new Map<number, string>();
  /** The expansion each endpoint's policy map is desired to hold. */
  private readonly policyWanted = new Map<number, readonly PolicyLpmEntry[]>();
  /** What each policy map was last given by the reconciler (its next write is the difference). */
  private readonly policyWritten = new Map<number, WrittenPolicy>();
  /** Endpoints whose policy map is to be unpinned once its entries are gone. */
  private readonly removedPolicies = new Set<number>();
  /** The shared policy maps (with `sharedPolicyMaps`). */
  readonly groups?: PolicyGroups;

  constructor(private readonly kernel: KernelMaps, private readonly opts: BpfMapsOptions) {
    const o = (table: string) => ({
      retryMinMs: opts.retryMinMs, retryMaxMs: opts.retryMaxMs,
      onError: (key: string, err: Error) => opts.onError?.(table, key, err),
    });
    const endpoints = (): Iterable<number> => this.policyWanted.keys();
    if (opts.sharedPolicyMaps) this.groups = new PolicyGroups(kernel, kernel.policyMapMax);
    this.reconcilers = [
      new Reconciler(this.lxcTable, lxcOps(kernel), o(LXC_MAP)),
      new Reconciler(this.ipcacheTable, ipcacheOps(kernel), o(IPCACHE_MAP)),
      this.groups
        // shared maps: a map is filled once per content, an endpoint's write is its slot (the slots of a batch are one write)
        ? new Reconciler(this.policyTable, sharedPolicyOps(this.groups, endpoints, (id) => this.policyWanted.get(id)), { ...o('cellium_policy'), batchSize: 4096 })
        // a batch of endpoints' maps per round step (each may be thousands of entries)
        : new Reconciler(this.policyTable, policyOps(kernel, endpoints, this.policyWritten), { ...o('cellium_policy'), batchSize: 16 }),
    ];
  }

  /**
   * Hands the reconcilers to the hive's jobs: one job per table, `reconcile-cellium_lxc` and so on,
   * each with its health scope (the table's state after every round), started after the start
   * hooks (so after the maps were opened) and stopped before the stop hooks; start()/stop() then
   * leave them alone. Without it (BpfDatapath used alone) start() runs them.
   */
  runAsJobs(jobs: Jobs): void {
    this.asJobs = true;
    for (const [i, r] of this.reconcilers.entries()) jobs.oneShot(`reconcile-${TABLE_NAMES[i]!}`, (ctx) => r.run(ctx));
  }

  /** Starts the reconcilers (the kernel maps must be open), unless the hive's jobs run them. */
  start(): void {
    if (!this.asJobs) for (const r of this.reconcilers) r.start();
  }

  /** Stops the reconcilers after the round in progress (jobs: the hive already did). */
  async stop(): Promise<void> {
    if (!this.asJobs) await Promise.all(this.reconcilers.map((r) => r.stop()));
  }

  /**
   * Prunes and repairs every kernel map now (the datapath calls it every prune interval once
   * restore is done). `keep(table, key)` spares undesired kernel entries from deletion.
   */
  async prune(keep?: (table: string, key: string) => boolean): Promise<{ pruned: number; repaired: number }> {
    let pruned = 0;
    let repaired = 0;
    for (const [i, r] of this.reconcilers.entries()) {
      const name = TABLE_NAMES[i]!;
      const x = await r.prune(keep && ((key) => keep(name, key)));
      pruned += x.pruned;
      repaired += x.repaired;
    }
    return { pruned, repaired };
  }

  /** See DatapathMaps. */
  setEndpoint(endpointId: number, entries: readonly LxcEntry[]): void {
    const keys: string[] = [];
    for (const e of entries) {
      const key = lxcKey(e.ip);
      keys.push(key);
      this.lxcTable.upsert(key, lxcValue({ ifIndex: e.ifIndex, identity: e.identity, endpointId: e.endpointId, mac: e.mac }));
    }
    for (const old of this.lxcKeys.get(endpointId) ?? []) {
      if (!keys.includes(old) && this.lxcTable.get(old)?.value.endpointId === endpointId) this.lxcTable.delete(old);
    }
    this.lxcKeys.set(endpointId, keys);
  }

  /** See DatapathMaps. */
  deleteEndpoint(endpointId: number): void {
    const ips = this.lxcKeys.get(endpointId) ?? [];
    for (const key of ips) {
      if (this.lxcTable.get(key)?.value.endpointId === endpointId) this.lxcTable.delete(key);
    }
    this.lxcKeys.delete(endpointId);
    if (ips.length) this.opts.onEndpointDeleted?.(ips);
  }

  /** See DatapathMaps. */
  upsertIPCache(entry: IPCacheEntry): void {
    this.ipcacheTable.upsert(ipcacheKey(entry.cidr), { identity: entry.identity, flags: 0 });
  }

  /** See DatapathMaps. */
  deleteIPCache(cidr: string): void {
    this.ipcacheTable.delete(ipcacheKey(cidr));
  }

  /** See DatapathMaps: a policy the map cannot hold keeps the old one and is reported by flush while it stands. */
  setPolicy(endpointId: number, entries: readonly PolicyEntry[]): void {
    let expanded: readonly PolicyLpmEntry[];
    try {
      expanded = expandPolicyCached(entries);
    } catch (err) {
      this.policyErrors.set(endpointId, (err as Error).message);
      return;
    }
    this.policyErrors.delete(endpointId);
    this.removedPolicies.delete(endpointId);
    if (this.policyWanted.get(endpointId) === expanded) return; // the very map state it has
    this.policyWanted.set(endpointId, expanded);
    this.policyTable.upsert(policyObjectKey(endpointId), { endpointId, entries: expanded });
  }

  /** See DatapathMaps: the entries are deleted, then the map is unpinned by the next flush. */
  deletePolicy(endpointId: number): void {
    this.policyTable.delete(policyObjectKey(endpointId));
    this.policyWanted.delete(endpointId);
    this.policyErrors.delete(endpointId);
    this.removedPolicies.add(endpointId);
  }

  /** Endpoints with a desired policy map. */
  policyEndpoints(): number[] {
    return [...this.policyWanted.keys()].sort((a, b) => a - b);
  }

  /**
   * See DatapathMaps: waits for the writes so far, unpins the policy maps of deleted endpoints, and
   * returns the failures still standing: with `endpointId` those of that endpoint's objects (its
   * policy keys, its lxc entries and their ipcache entries) and a policy it was refused, else all.
   */
  async flush(signal?: AbortSignal, endpointId?: number): Promise<readonly string[]> {
    await Promise.all(this.reconcilers.map((r) => r.flush()));
    signal?.throwIfAborted();
    for (const id of this.removedPolicies) {
      if (this.policyWanted.has(id)) continue;
      if (!this.groups) this.kernel.removePolicy(id); // shared maps: the delete removed the pin with the slot
      this.removedPolicies.delete(id);
    }
    if (endpointId === undefined) {
      const refused = [...this.policyErrors].map(([id, msg]) => `${policyMapName(id)}: ${msg}`);
      const { lxcTable: l, ipcacheTable: i, policyTable: p } = this;
      return [...refused, ...failed(l, l.failing()), ...failed(i, i.failing()), ...failed(p, p.failing())];
    }
    const refused = this.policyErrors.get(endpointId);
    const ips = this.lxcKeys.get(endpointId) ?? [];
    return [
      ...(refused ? [`${policyMapName(endpointId)}: ${refused}`] : []),
      ...failed(this.policyTable, this.policyWanted.has(endpointId) ? [policyObjectKey(endpointId)] : []),
      ...failed(this.lxcTable, ips),
      ...failed(this.ipcacheTable, ips.map(hostCidrKey)),
    ];
  }

  /** Status and reconciler counters of every table. */
  report(): BpfTableReport[] {
    return [this.lxcTable, this.ipcacheTable, this.policyTable].map((t, i) => ({ ...t.status(), reconciler: this.reconcilers[i]!.stats() }));
  }

  /** See DatapathMaps. */
  async list(): Promise<readonly MapDump[]> {
    const names = [LXC_MAP, IPCACHE_MAP, METRICS_MAP_NAME, ...this.policyEndpoints().map(policyMapName)];
    const out: MapDump[] = [];
    for (const n of names) {
      const d = await this.get(n);
      if (d) out.push(d);
    }
    return out;
  }

  /** See DatapathMaps: desired entry counts (the kernel maps converge on them; see report() for progress). */
  async summary(): Promise<readonly MapSummary[]> {
    return [
      { name: LXC_MAP, size: this.lxcTable.size },
      { name: IPCACHE_MAP, size: this.ipcacheTable.size },
      { name: METRICS_MAP_NAME, size: Object.keys(DROP_REASONS).length },
      ...this.policyEndpoints().map((id) => ({ name: policyMapName(id), size: this.policyWanted.get(id)!.length })),
    ];
  }

  /** See DatapathMaps: the kernel's contents of the map, with the reconciliation status of its table. */
  async get(name: string): Promise<MapDump | undefined> {
    if (name === LXC_MAP) return dumpLxc(this.kernel, name, tableStatus(this.lxcTable.status()));
    if (name === IPCACHE_MAP) return dumpIPCache(this.kernel, name, tableStatus(this.ipcacheTable.status()));
    if (name === METRICS_MAP_NAME) return dumpMetrics(this.kernel, name);
    const id = endpointOfPolicyMap(name);
    if (id === undefined) return undefined;
    const wanted = this.policyWanted.has(id);
    if (!wanted && !this.kernel.existingPolicy(id, !!this.groups)) return undefined;
    return dumpPolicy(this.kernel, id, name, !!this.groups, policyStatus(this.policyTable, wanted ? [policyObjectKey(id)] : [], this.policyErrors.get(id)));
  }
}

/** `<table> <key>: <error>` of each of `keys` whose last write failed. */
function failed<V>(table: DesiredTable<V>, keys: Iterable<string>): string[] {
  const out: string[] = [];
  for (const key of keys) {
    const o = table.get(key);
    if (o?.state === 'error') out.push(`${table.name} ${key}: ${o.message ?? 'write failed'}`);
  }
  return out;
}
