/**
 * The in-memory datapath maps: the endpoints map (`cellium_lxc`, IP -> local endpoint), the
 * ipcache (`cellium_ipcache`, CIDR -> identity, longest-prefix match) and one policy map per
 * endpoint (`cellium_policy_NNNNN`), an LPM table with the kernel map's keys (src/datapath/model/policy-lpm.ts).
 * Writes apply at once; a policy the map cannot hold (policy-lpm refuses it) keeps the old one and
 * is reported by flush while it stands, as the BPF datapath reports a failed write.
 */
import { canonicalAddr, formatCidr, parseAddr, parseCidr, prefixMask, type Addr, type Cidr } from '../../lib/addr.js';
import { IPCACHE_MAP, LXC_MAP, endpointOfPolicyMap, policyMapName } from '../../datapath/map-names.js';
import { PolicyLpm } from '../../datapath/model/policy-lpm.js';
import { expandPolicyCached, policyKeyId, type PolicyLpmEntry } from '../../maps/policy/key.js';
import type { DatapathMaps, IPCacheEntry, LxcEntry, MapDump, MapSummary, PolicyEntry, ReconcileStatus } from '../../datapath/types.js';

/** IPCache contents of one family, by prefix length then network. */
class LpmTable {
  private readonly byPrefix = new Map<number, Map<bigint, IPCacheEntry>>();
  private prefixes: number[] = [];

  set(c: Cidr, e: IPCacheEntry): void {
    let m = this.byPrefix.get(c.prefix);
    if (!m) {
      this.byPrefix.set(c.prefix, (m = new Map()));
      this.prefixes = [...this.byPrefix.keys()].sort((a, b) => b - a);
    }
    m.set(c.network, e);
  }

  delete(c: Cidr): boolean {
    const m = this.byPrefix.get(c.prefix);
    const had = m?.delete(c.network) ?? false;
    if (m && m.size === 0) {
      this.byPrefix.delete(c.prefix);
      this.prefixes = this.prefixes.filter((p) => p !== c.prefix);
    }
    return had;
  }

  lookup(a: Addr, bits: number): IPCacheEntry | undefined {
    for (const p of this.prefixes) {
      const hit = this.byPrefix.get(p)!.get(a.value & prefixMask(bits, p));
      if (hit) return hit;
    }
    return undefined;
  }
}

/** LPM tables by (shared) expansion: endpoints with the same map state share one read-only table. */
const lpms = new WeakMap<readonly PolicyLpmEntry[], PolicyLpm>();

/** The in-memory DatapathMaps. */
export class MemoryMaps implements DatapathMaps {
  private readonly lxc = new Map<string, LxcEntry>();
  private readonly lxcByEndpoint = new Map<number, string[]>();
  private readonly ipcache = new Map<string, IPCacheEntry>();
  private readonly lpm = { ipv4: new LpmTable(), ipv6: new LpmTable() };
  private readonly policy = new Map<number, { readonly entries: readonly PolicyEntry[]; readonly lpm: PolicyLpm; readonly keys: readonly PolicyLpmEntry[] }>();
  private readonly policyErrors = new Map<number, string>();
  private updatedAt = new Date().toISOString();
  /** How many map writes (entries added, changed or removed) were made. */
  writes = 0;

  /** See DatapathMaps. */
  setEndpoint(endpointId: number, entries: readonly LxcEntry[]): void {
    this.deleteEndpoint(endpointId);
    const ips: string[] = [];
    for (const e of entries) {
      const ip = canonicalAddr(e.ip);
      if (!ip) throw new Error(`lxc entry of endpoint ${endpointId}: "${e.ip}" is not an IP address`);
      this.lxc.set(ip, { ...e, ip });
      ips.push(ip);
    }
    this.lxcByEndpoint.set(endpointId, ips);
    this.touch(entries.length);
  }

  /** See DatapathMaps. */
  deleteEndpoint(endpointId: number): void {
    const ips = this.lxcByEndpoint.get(endpointId) ?? [];
    for (const ip of ips) if (this.lxc.get(ip)?.endpointId === endpointId) this.lxc.delete(ip);
    this.lxcByEndpoint.delete(endpointId);
    this.touch(ips.length);
  }

  /** See DatapathMaps. */
  upsertIPCache(entry: IPCacheEntry): void {
    const c = parseCidr(entry.cidr);
    const key = formatCidr(c);
    const e = { cidr: key, identity: entry.identity };
    this.ipcache.set(key, e);
    this.lpm[c.family].set(c, e);
    this.touch(1);
  }

  /** See DatapathMaps. */
  deleteIPCache(cidr: string): void {
    const c = parseCidr(cidr);
    if (this.ipcache.delete(formatCidr(c))) this.touch(1);
    this.lpm[c.family].delete(c);
  }

  /** See DatapathMaps. */
  setPolicy(endpointId: number, entries: readonly PolicyEntry[]): void {
    let keys: readonly PolicyLpmEntry[];
    try {
      keys = expandPolicyCached(entries);
    } catch (err) {
      this.policyErrors.set(endpointId, (err as Error).message);
      return;
    }
    this.policyErrors.delete(endpointId);
    const old = new Set((this.policy.get(endpointId)?.keys ?? []).map((k) => `${policyKeyId(k.key)}=${k.deny}`));
    let lpm = lpms.get(keys);
    if (!lpm) lpms.set(keys, (lpm = new PolicyLpm(keys)));
    this.policy.set(endpointId, { entries: entries.map((e) => ({ ...e })), lpm, keys });
    this.touch(keys.filter((k) => !old.delete(`${policyKeyId(k.key)}=${k.deny}`)).length + old.size);
  }

  /** See DatapathMaps. */
  deletePolicy(endpointId: number): void {
    const had = this.policy.get(endpointId);
    this.policy.delete(endpointId);
    this.policyErrors.delete(endpointId);
    if (had) this.touch(had.keys.length);
  }

  /**
   * See DatapathMaps: writes are applied already; returns the policies the maps refuse to hold
   * (they keep the old one) for as long as they do: that endpoint's, or all of them.
   */
  async flush(_signal?: AbortSignal, endpointId?: number): Promise<readonly string[]> {
    return [...this.policyErrors].filter(([id]) => endpointId === undefined || id === endpointId).map(([id, msg]) => `${policyMapName(id)}: ${msg}`);
  }

  /** The local endpoint owning an IP. */
  lookupEndpoint(ip: string): LxcEntry | undefined {
    const c = canonicalAddr(ip);
    return c ? this.lxc.get(c) : undefined;
  }

  /** The ipcache entry with the longest prefix containing `ip`. */
  lookupIPCache(ip: string): IPCacheEntry | undefined {
    const a = parseAddr(ip);
    return a && this.lpm[a.family].lookup(a, a.family === 'ipv4' ? 32 : 128);
  }

  /** The policy map state of an endpoint as given to setPolicy (undefined when it has no policy map). */
  policyOf(endpointId: number): readonly PolicyEntry[] | undefined {
    return this.policy.get(endpointId)?.entries;
  }

  /** The LPM table of an endpoint's policy map (what the verdict looks up). */
  policyTable(endpointId: number): PolicyLpm | undefined {
    return this.policy.get(endpointId)?.lpm;
  }

  /** See DatapathMaps. */
  async list(): Promise<readonly MapDump[]> {
    return [this.dump(LXC_MAP)!, this.dump(IPCACHE_MAP)!, ...[...this.policy.keys()].sort((a, b) => a - b).map((id) => this.dump(policyMapName(id))!)];
  }

  /** See DatapathMaps. */
  async summary(): Promise<readonly MapSummary[]> {
    return [
      { name: LXC_MAP, size: this.lxc.size },
      { name: IPCACHE_MAP, size: this.ipcache.size },
      ...[...this.policy.entries()].sort(([a], [b]) => a - b).map(([id, p]) => ({ name: policyMapName(id), size: p.keys.length })),
    ];
  }

  /** See DatapathMaps. */
  async get(name: string): Promise<MapDump | undefined> {
    return this.dump(name);
  }

  private dump(name: string): MapDump | undefined {
    const status: ReconcileStatus = { state: 'done', updatedAt: this.updatedAt };
    if (name === LXC_MAP) {
      const entries = [...this.lxc.values()].map((e) => ({ key: e.ip, value: `id=${e.endpointId} ifindex=${e.ifIndex} identity=${e.identity} mac=${e.mac}` }));
      return { name, status, entries };
    }
    if (name === IPCACHE_MAP) {
      return { name, status, entries: [...this.ipcache.values()].map((e) => ({ key: e.cidr, value: `identity=${e.identity}` })) };
    }
    const id = endpointOfPolicyMap(name);
    const pol = id === undefined ? undefined : this.policy.get(id);
    if (!pol || id === undefined) return undefined;
    const err = this.policyErrors.get(id);
    return { name, status: err ? { state: 'error', message: err, updatedAt: this.updatedAt } : status, entries: pol.keys.map((e) => ({ key: policyKeyId(e.key), value: e.deny ? 'deny' : 'allow' })) };
  }

  private touch(n: number): void {
    this.writes += n;
    this.updatedAt = new Date().toISOString();
  }
}
