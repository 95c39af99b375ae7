/**
 * Writes frontends into the LB maps (Cilium's BPFOps): the reconciler's target operations. The
 * order keeps the datapath from ever indexing a missing slot or backend: backends first, then the
 * backend slots 1..N, then the Maglev table, then reverse NAT, then the master slot 0 with the new
 * counts, and only then are the slots above the new count deleted; a deletion goes the other way
 * (master slot, reverse NAT, Maglev table, slots, then the backends no frontend uses any more).
 * Each VIP also gets a wildcard entry (port 0, protocol 0, no backends), so packets to a port the
 * service does not have are dropped rather than sent to whatever owns the address.
 */
import type { ReconcileOps } from '../../lib/reconciler/index.js';
import { BackendFlag, LBScopeCode, SvcFlag, SvcFlag2, type LBMap, type LBMapSet, type LBRevNatValue, type LBServiceKey, type LBServiceValue, type LBBackendValue, type LBAffinityMatchKey } from '../../datapath/lb-maps.js';
import { maglevTable, type MaglevBackend } from '../../lib/maglev.js';
import { formatL3n4, isIPv6 } from './addr.js';
import { BackendIds } from './backend-ids.js';
import type { Backend, FrontendDesired, L3n4Addr, L4Proto } from './types.js';

/** IP protocol numbers of the frontend protocols. */
export const PROTO_NUMBER: Readonly<Record<L4Proto, number>> = { tcp: 6, udp: 17, any: 0 };
const PROTO_OF: Readonly<Record<number, L4Proto>> = { 6: 'tcp', 17: 'udp', 0: 'any' };

/** What the ops need to know of the configuration. */
export interface LBOpsOptions {
  readonly algorithm: 'random' | 'maglev';
  readonly maglevTableSize: number;
  /** Highest backend ID. */
  readonly maxBackends: number;
  /** What a packet to a service without backends gets (--service-no-backend-response; default reject). */
  readonly noBackendResponse?: 'reject' | 'drop';
}

/** What was written for one frontend. */
interface Written {
  /** The desired value written (undefined: found in the kernel after a restart). */
  readonly fe?: FrontendDesired;
  readonly family: 4 | 6;
  readonly base: LBServiceKey;
  readonly revNat: number;
  /** count + qcount. */
  readonly total: number;
  /** The backends in slot order, by their formatL3n4 text (the backend IDs' key). */
  readonly backends: readonly string[];
  readonly affinity: boolean;
  readonly maglev: boolean;
}

interface FamilyMaps {
  readonly svc: LBMap<LBServiceKey, LBServiceValue>;
  readonly be: LBMap<number, LBBackendValue>;
  readonly rn: LBMap<number, LBRevNatValue>;
  readonly mg: LBMap<number, Uint32Array>;
}

/** Takes new flows: active with a weight. */
export function takesNewFlows(b: Backend): boolean {
  return b.state === 'active' && b.weight > 0;
}

function stateFlag(b: Backend): number {
  if (b.state === 'active') return BackendFlag.active;
  if (b.state === 'terminating' || b.state === 'terminating-not-serving') return BackendFlag.terminating;
  return b.state === 'quarantined' ? BackendFlag.quarantined : BackendFlag.maintenance;
}

/** The master entry's flags for a frontend (`drop`: SVC_FLAG2_NO_BACKEND_DROP, --service-no-backend-response=drop). */
export function serviceFlags(fe: FrontendDesired, noBackendResponse: 'reject' | 'drop' = 'reject'): { flags: number; flags2: number } {
  let flags = 0;
  let flags2 = 0;
  if (fe.type === 'ExternalIPs') flags |= SvcFlag.externalIp;
  if (fe.type === 'NodePort') flags |= SvcFlag.nodePort;
  if (fe.type === 'HostPort') flags |= SvcFlag.hostPort;
  if (fe.type === 'LoadBalancer') flags |= SvcFlag.loadBalancer;
  if (fe.type === 'LocalRedirect') flags2 |= SvcFlag2.localRedirect;
  if (fe.type !== 'ClusterIP') flags |= SvcFlag.routable;
  if (fe.affinityTimeoutSec > 0) flags |= SvcFlag.affinity;
  if (fe.extTrafficPolicy === 'Local' && fe.type !== 'ClusterIP') flags |= SvcFlag.extLocalScope;
  if (fe.intTrafficPolicy === 'Local') flags2 |= SvcFlag2.intLocalScope;
  if (fe.sourceRanges.length && fe.type === 'LoadBalancer') flags |= SvcFlag.sourceRange;
  if (noBackendResponse === 'drop') flags2 |= SvcFlag2.noBackendDrop;
  return { flags, flags2 };
}

/** The reconciler's operations on the LB maps. */
export class LBOps implements ReconcileOps<FrontendDesired> {
  private readonly written = new Map<string, Written>();
  private readonly ids: BackendIds;
  /** Wildcard entry (wildcardText) -> frontends on that VIP. */
  private readonly wildcards = new Map<string, { key: LBServiceKey; family: 4 | 6; users: Set<string> }>();
  private fam4?: FamilyMaps;
  private fam6?: FamilyMaps;

  constructor(
    private readonly maps: LBMapSet,
    private readonly opts: LBOpsOptions,
  ) {
    this.ids = new BackendIds(opts.maxBackends);
  }

  /** A family's maps, taken on first use: the BPF datapath's LB maps open when first touched (after the datapath's start mounted the BPF file system), never at construction. */
  private fam(f: 4 | 6): FamilyMaps {
    const m = this.maps;
    if (f === 4) return (this.fam4 ??= { svc: m.services4, be: m.backends4, rn: m.revNat4, mg: m.maglev4 });
    return (this.fam6 ??= { svc: m.services6, be: m.backends6, rn: m.revNat6, mg: m.maglev6 });
  }

  /**
   * Takes over what a previous run left in the kernel: backend IDs (conntrack entries name them)
   * and the frontends with their slots, so updates delete the right slots and prune removes the
   * frontends nobody wants any more. Returns how many frontends were found.
   */
  restore(): number {
    let n = 0;
    for (const family of [4, 6] as const) {
      const m = this.fam(family);
      const byId = new Map<number, string>();
      for (const [id, v] of m.be.entries()) {
        const addr: L3n4Addr = { ip: v.address, port: v.port, protocol: PROTO_OF[v.proto] ?? 'any', scope: 'external' };
        this.ids.restore(addr, id, v.flags);
        byId.set(id, formatL3n4(addr));
      }
      const all = m.svc.entries();
      const slots = new Map<string, number>();
      for (const [k, v] of all) if (k.slot > 0) slots.set(`${formatKey({ ...k, slot: 0 })}#${k.slot}`, v.backendId);
      for (const [k, v] of all) {
        if (k.slot !== 0) continue;
        if (k.port === 0 && k.proto === 0) {
          this.wildcards.set(wildcardText(k), { key: k, family, users: new Set() });
          continue;
        }
        const key = feKeyOf(k);
        const backends: string[] = [];
        for (let s = 1; s <= v.count + v.qcount; s++) {
          const addr = byId.get(slots.get(`${formatKey(k)}#${s}`) ?? -1);
          if (addr) {
            backends.push(addr);
            this.ids.acquireKey(addr, key);
          }
        }
        this.written.set(key, { family, base: k, revNat: v.revNat, total: v.count + v.qcount, backends, affinity: (v.flags & SvcFlag.affinity) !== 0, maglev: true });
        n++;
      }
    }
    return n;
  }

  async update(batch: readonly (readonly [string, FrontendDesired])[]): Promise<ReadonlyMap<string, Error>> {
    const failed = new Map<string, Error>();
    for (const [key, fe] of batch) {
      try {
        this.write(key, fe);
      } catch (err) {
        failed.set(key, err as Error);
      }
    }
    return failed;
  }

  async delete(keys: readonly string[]): Promise<ReadonlyMap<string, Error>> {
    const failed = new Map<string, Error>();
    for (const key of keys) {
      try {
        this.remove(key);
      } catch (err) {
        failed.set(key, err as Error);
      }
    }
    return failed;
  }

  /**
   * The frontends in the kernel: those whose master entry is as written map to the value written;
   * one that drifted (or was found after a restart) maps to a marker that equals no desired value,
   * so prune rewrites or deletes it. Backends and wildcard entries no frontend uses are deleted here.
   */
  async list(): Promise<ReadonlyMap<string, FrontendDesired>> {
    const out = new Map<string, FrontendDesired>();
    for (const [key, w] of this.written) {
      const master = this.fam(w.family).svc.get(w.base);
      const intact = w.fe && master && master.revNat === w.revNat && master.count + master.qcount === w.total;
      out.set(key, intact ? w.fe! : ({ drifted: key } as unknown as FrontendDesired));
    }
    for (const [text, wc] of this.wildcards) {
      if (wc.users.size) continue;
      this.fam(wc.family).svc.delete([wc.key]);
      this.wildcards.delete(text);
    }
    for (const [addrKey, id] of this.ids.unreferenced()) {
      this.fam(addrKey.startsWith('[') ? 6 : 4).be.delete([id]);
      this.ids.forget(addrKey);
    }
    return out;
  }

  private write(key: string, fe: FrontendDesired): void {
    const family = isIPv6(fe.address.ip) ? 6 : 4;
    const m = this.fam(family);
    const prev = this.written.get(key);
    const addr = fe.address.ip;
    const port = fe.address.port;
    const proto = PROTO_NUMBER[fe.address.protocol];
    const scope = LBScopeCode[fe.address.scope];
    const base: LBServiceKey = { address: addr, port, slot: 0, proto, scope };
    // slot order: the backends that take new flows (1..count), then the others (..count+qcount)
    const ordered: Backend[] = [];
    for (const b of fe.backends) if (takesNewFlows(b)) ordered.push(b);
    const count = ordered.length;
    for (const b of fe.backends) if (!takesNewFlows(b)) ordered.push(b);
    const total = ordered.length;
    // 1. backends
    const names = new Array<string>(total);
    const ids = new Array<number>(total);
    for (let i = 0; i < total; i++) {
      const name = formatL3n4(ordered[i]!.address);
      names[i] = name;
      ids[i] = this.ids.acquireKey(name, key);
    }
    const beWrites: [number, LBBackendValue][] = [];
    for (let i = 0; i < total; i++) {
      const b = ordered[i]!;
      const id = ids[i]!;
      const flags = stateFlag(b);
      if (this.ids.flagsOf(id) === flags && m.be.get(id)) continue;
      beWrites.push([id, { address: b.address.ip, port: b.address.port, proto: PROTO_NUMBER[b.address.protocol], flags, clusterId: 0, zone: 0 }]);
    }
    if (beWrites.length) {
      m.be.set(beWrites);
      for (const [id, v] of beWrites) this.ids.setFlags(id, v.flags);
    }
    // 2. slots 1..N
    if (total) {
      const slots = new Array<readonly [LBServiceKey, LBServiceValue]>(total);
      for (let i = 0; i < total; i++) slots[i] = [{ address: addr, port, slot: i + 1, proto, scope }, { backendId: ids[i]!, count: 0, qcount: 0, revNat: fe.id, flags: 0, flags2: 0 }];
      m.svc.set(slots);
    }
    // 3. Maglev table
    const maglev = this.opts.algorithm === 'maglev';
    if (maglev) {
      const active: MaglevBackend[] = [];
      for (let i = 0; i < count; i++) active.push({ id: ids[i]!, name: names[i]!, weight: ordered[i]!.weight });
      m.mg.set([[fe.id, maglevTable(active, this.opts.maglevTableSize)]]);
    }
    // 4. reverse NAT
    m.rn.set([[fe.id, { address: addr, port }]]);
    const affinity = fe.affinityTimeoutSec > 0;
    if (affinity && total) this.maps.affinityMatch.set(ids.map((id) => [{ backendId: id, revNat: fe.id }, 1] as const));
    // 5. master slot 0 with the new counts
    const { flags, flags2 } = serviceFlags(fe, this.opts.noBackendResponse);
    m.svc.set([[base, { backendId: fe.affinityTimeoutSec, count, qcount: total - count, revNat: fe.id, flags, flags2 }]]);
    if (fe.type === 'ClusterIP') this.useWildcard(family, base, key);
    else this.dropWildcard(key, base);
    // 6. slots above the new count
    if (prev && prev.total > total) {
      const gone: LBServiceKey[] = [];
      for (let s = total + 1; s <= prev.total; s++) gone.push({ ...prev.base, slot: s });
      m.svc.delete(gone);
    }
    if (prev && prev.revNat !== fe.id) {
      m.rn.delete([prev.revNat]);
      if (prev.maglev) m.mg.delete([prev.revNat]);
    } else if (prev?.maglev && !maglev) m.mg.delete([prev.revNat]);
    // backends this frontend no longer has (and their affinity matches)
    let dropped: readonly string[] = [];
    if (prev?.backends.length) {
      const now = new Set(names);
      dropped = prev.backends.filter((a) => !now.has(a));
    }
    const matchGone = prev?.affinity ? (affinity && prev.revNat === fe.id ? dropped : prev.backends) : [];
    if (matchGone.length) this.maps.affinityMatch.delete(this.affinityKeys(matchGone, prev!.revNat));
    this.releaseBackends(family, key, dropped);
    this.written.set(key, { fe, family, base, revNat: fe.id, total, backends: names, affinity, maglev });
  }

  private remove(key: string): void {
    const w = this.written.get(key);
    if (!w) return;
    const m = this.fam(w.family);
    m.svc.delete([w.base]);
    this.dropWildcard(key, w.base);
    m.rn.delete([w.revNat]);
    if (w.maglev) m.mg.delete([w.revNat]);
    const slots: LBServiceKey[] = [];
    for (let s = 1; s <= w.total; s++) slots.push({ ...w.base, slot: s });
    if (slots.length) m.svc.delete(slots);
    if (w.affinity) this.maps.affinityMatch.delete(this.affinityKeys(w.backends, w.revNat));
    this.releaseBackends(w.family, key, w.backends);
    this.written.delete(key);
  }

  /** The affinity match keys of backends (by address text) that still have an ID. */
  private affinityKeys(backends: readonly string[], revNat: number): LBAffinityMatchKey[] {
    const out: LBAffinityMatchKey[] = [];
    for (const a of backends) {
      const id = this.ids.idOfKey(a);
      if (id !== undefined) out.push({ backendId: id, revNat });
    }
    return out;
  }

  private releaseBackends(family: 4 | 6, key: string, addrs: readonly string[]): void {
    const freed: number[] = [];
    for (const a of addrs) {
      const id = this.ids.idOfKey(a);
      if (id !== undefined && this.ids.releaseKey(a, key)) freed.push(id);
    }
    if (freed.length) {
      this.fam(family).be.delete(freed);
    }
  }

  private useWildcard(family: 4 | 6, base: LBServiceKey, fe: string): void {
    const text = wildcardText(base);
    let wc = this.wildcards.get(text);
    if (!wc) {
      const key = wildcardOf(base);
      this.fam(family).svc.set([[key, { backendId: 0, count: 0, qcount: 0, revNat: 0, flags: 0, flags2: 0 }]]);
      this.wildcards.set(text, (wc = { key, family, users: new Set() }));
    }
    wc.users.add(fe);
  }

  /** Frontend `fe` (master key `base`) no longer uses its address's wildcard entry: deleted with its last user. */
  private dropWildcard(fe: string, base: LBServiceKey): void {
    const text = wildcardText(base);
    const wc = this.wildcards.get(text);
    if (!wc || !wc.users.delete(fe) || wc.users.size) return;
    this.fam(wc.family).svc.delete([wc.key]);
    this.wildcards.delete(text);
  }
}

/** The wildcard entry (port 0, any protocol) of a master key's address. */
function wildcardOf(base: LBServiceKey): LBServiceKey {
  return { address: base.address, port: 0, slot: 0, proto: 0, scope: base.scope };
}

/** The wildcards' key: the address and scope of a services key (its port, protocol and slot do not matter). */
function wildcardText(k: LBServiceKey): string {
  return `${k.address}|${k.scope}`;
}

function formatKey(k: LBServiceKey): string {
  return `${k.address}|${k.port}|${k.proto}|${k.scope}|${k.slot}`;
}

/** The frontend key (formatL3n4) of a master entry. */
function feKeyOf(k: LBServiceKey): string {
  return formatL3n4({ ip: k.address, port: k.port, protocol: PROTO_OF[k.proto] ?? 'any', scope: k.scope === LBScopeCode.internal ? 'internal' : 'external' });
}
