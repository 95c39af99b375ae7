/**
 * The load-balancing maps as both datapaths hold them (Cilium's bpf/lib/lb.h): the services map
 * (frontend + backend slot -> backend ID, or for slot 0 the master entry with the backend count),
 * the backends map (ID -> address), reverse NAT (rev-NAT index -> frontend address), Maglev lookup
 * tables (rev-NAT index -> backend IDs) and the affinity match map (backend of an affinity
 * service). The kernel maps (src/maps/lb) and the in-memory ones below implement the same set, so
 * the writer and the verdict model see one shape.
 */
import { token } from '../hive/token.js';

/** Key of a services map entry (struct lb4_key / lb6_key). */
export interface LBServiceKey {
  readonly address: string;
  /** Destination port; 0 with proto 0 is the wildcard entry of a VIP. */
  readonly port: number;
  /** 0 the master entry, 1.. the backend slots. */
  readonly slot: number;
  /** IP protocol number (6 TCP, 17 UDP, 0 any). */
  readonly proto: number;
  /** LB_LOOKUP_SCOPE_EXT (0) or LB_LOOKUP_SCOPE_INT (1). */
  readonly scope: number;
}

/** Value of a services map entry (struct lb4_service). */
export interface LBServiceValue {
  /** Backend ID (slots), or the affinity timeout in seconds (master entry). */
  readonly backendId: number;
  /** Master entry: slots of backends that take new flows (1..count). */
  readonly count: number;
  /** Master entry: slots after them of backends that keep only their flows (terminating, quarantined, maintenance). */
  readonly qcount: number;
  readonly revNat: number;
  readonly flags: number;
  readonly flags2: number;
}

/** Value of a backends map entry (struct lb4_backend / lb6_backend). */
export interface LBBackendValue {
  readonly address: string;
  readonly port: number;
  readonly proto: number;
  /** BE_STATE_* */
  readonly flags: number;
  readonly clusterId: number;
  readonly zone: number;
}

/** Value of a reverse-NAT entry: the frontend address replies are rewritten to. */
export interface LBRevNatValue {
  readonly address: string;
  readonly port: number;
}

/** Key of the affinity match map (struct lb_affinity_match). */
export interface LBAffinityMatchKey {
  readonly backendId: number;
  readonly revNat: number;
}

/** Backend states in the backend's flags (Cilium's BE_STATE_*). */
export const BackendFlag = { active: 0, terminating: 1, quarantined: 2, maintenance: 3 } as const;

/** Service flags (SVC_FLAG_*) of the master entry's `flags`. */
export const SvcFlag = {
  externalIp: 1 << 0, nodePort: 1 << 1, extLocalScope: 1 << 2, hostPort: 1 << 3, affinity: 1 << 4,
  loadBalancer: 1 << 5, routable: 1 << 6, sourceRange: 1 << 7,
} as const;

/** Service flags of `flags2` (SVC_FLAG_*; noBackendDrop is Cellium's: --service-no-backend-response=drop). */
export const SvcFlag2 = { localRedirect: 1 << 0, nat46x64: 1 << 1, l7LoadBalancer: 1 << 2, loopback: 1 << 3, intLocalScope: 1 << 4, twoScopes: 1 << 5, noBackendDrop: 1 << 6 } as const;

/** Lookup scopes of the services key. */
export const LBScopeCode = { external: 0, internal: 1 } as const;

/** One map of the set: batched writes and deletes, reads. Throws on a failed operation. */
export interface LBMap<K, V> {
  readonly name: string;
  get(key: K): V | undefined;
  set(entries: readonly (readonly [K, V])[]): void;
  delete(keys: readonly K[]): void;
  entries(): [K, V][];
}

/** The load-balancing maps of one datapath. */
export interface LBMapSet {
  readonly services4: LBMap<LBServiceKey, LBServiceValue>;
  readonly services6: LBMap<LBServiceKey, LBServiceValue>;
  readonly backends4: LBMap<number, LBBackendValue>;
  readonly backends6: LBMap<number, LBBackendValue>;
  readonly revNat4: LBMap<number, LBRevNatValue>;
  readonly revNat6: LBMap<number, LBRevNatValue>;
  /** rev-NAT index -> the Maglev lookup table (backend IDs). */
  readonly maglev4: LBMap<number, Uint32Array>;
  readonly maglev6: LBMap<number, Uint32Array>;
  readonly affinityMatch: LBMap<LBAffinityMatchKey, number>;
  /**
   * Names of the maps opening them replaced (pinned by an earlier run with another size or
   * layout): programs loaded before still hold the old ones. Absent for maps never pinned.
   */
  readonly replaced?: readonly string[];
}

/** Token for the selected datapath's LB maps. */
export const LBMapsToken = token<LBMapSet>('LBMaps');

/** The names of the maps (Cilium's, prefixed cellium_). */
export const LB_MAP_NAMES = {
  services4: 'cellium_lb4_services', services6: 'cellium_lb6_services',
  backends4: 'cellium_lb4_backends', backends6: 'cellium_lb6_backends',
  revNat4: 'cellium_lb4_reverse_nat', revNat6: 'cellium_lb6_reverse_nat',
  maglev4: 'cellium_lb4_maglev', maglev6: 'cellium_lb6_maglev',
  affinity4: 'cellium_lb4_affinity', affinity6: 'cellium_lb6_affinity',
  affinityMatch: 'cellium_lb_affinity_match',
} as const;

/** A services key as text (`10.96.0.10:80/6 slot 0 scope 0`), for messages and tests. */
export function serviceKeyText(k: LBServiceKey): string {
  return `${k.address.includes(':') ? `[${k.address}]` : k.address}:${k.port}/${k.proto} slot ${k.slot} scope ${k.scope}`;
}

/** An in-memory map, keyed by a text (or numeric) form of the key. */
export class MemoryLBMap<K, V> implements LBMap<K, V> {
  /** Key form -> the entry as written (the caller's tuple: it is readonly). */
  private readonly data = new Map<string | number, readonly [K, V]>();

  constructor(
    readonly name: string,
    /** The key's identity: a text, or a number. */
    private readonly keyText: (k: K) => string | number,
    /** Entries the map holds at most (a write beyond fails like the kernel's E2BIG). */
    private readonly maxEntries = Infinity,
  ) {}

  get(key: K): V | undefined {
    return this.data.get(this.keyText(key))?.[1];
  }

  set(entries: readonly (readonly [K, V])[]): void {
    for (const e of entries) {
      const t = this.keyText(e[0]);
      if (this.data.size >= this.maxEntries && !this.data.has(t)) throw new Error(`${this.name} is full (${this.maxEntries} entries)`);
      this.data.set(t, e);
    }
  }

  delete(keys: readonly K[]): void {
    for (const k of keys) this.data.delete(this.keyText(k));
  }

  entries(): [K, V][] {
    return [...this.data.values()].map(([k, v]) => [k, v]);
  }

  /** Entry count. */
  get size(): number {
    return this.data.size;
  }
}

/**
 * The in-memory services map: per address, the entries by port, slot, protocol and scope packed
 * into one number (48 bits, exact in a double). No string is built per entry or lookup, and only
 * the value is kept (the key is rebuilt for `entries()`), which matters with a slot per backend.
 */
export class MemoryServiceLBMap implements LBMap<LBServiceKey, LBServiceValue> {
  private readonly data = new Map<string, Map<number, LBServiceValue>>();
  private count = 0;

  constructor(
    readonly name: string,
    /** Entries the map holds at most (a write beyond fails like the kernel's E2BIG). */
    private readonly maxEntries = Infinity,
  ) {}

  get(key: LBServiceKey): LBServiceValue | undefined {
    return this.data.get(key.address)?.get(packServiceKey(key));
  }

  set(entries: readonly (readonly [LBServiceKey, LBServiceValue])[]): void {
    for (const [k, v] of entries) {
      let inner = this.data.get(k.address);
      const p = packServiceKey(k);
      if (this.count >= this.maxEntries && !inner?.has(p)) throw new Error(`${this.name} is full (${this.maxEntries} entries)`);
      if (!inner) this.data.set(k.address, (inner = new Map()));
      const before = inner.size;
      inner.set(p, v);
      this.count += inner.size - before;
    }
  }

  delete(keys: readonly LBServiceKey[]): void {
    for (const k of keys) {
      const inner = this.data.get(k.address);
      if (!inner?.delete(packServiceKey(k))) continue;
      this.count--;
      if (!inner.size) this.data.delete(k.address);
    }
  }

  entries(): [LBServiceKey, LBServiceValue][] {
    const out: [LBServiceKey, LBServiceValue][] = [];
    for (const [address, inner] of this.data) {
      for (const [p, v] of inner) {
        const scope = p % 256;
        const proto = Math.floor(p / 256) % 256;
        const slot = Math.floor(p / 65536) % 65536;
        out.push([{ address, port: Math.floor(p / 4294967296), slot, proto, scope }, v]);
      }
    }
    return out;
  }

  /** Entry count. */
  get size(): number {
    return this.count;
  }
}

/** Port, slot, protocol and scope of a services key in one number. */
function packServiceKey(k: LBServiceKey): number {
  return ((k.port * 65536 + k.slot) * 256 + k.proto) * 256 + k.scope;
}

/** An in-memory map with numeric keys (backend IDs, rev-NAT indexes): the value by the key itself. */
export class MemoryNumberLBMap<V> implements LBMap<number, V> {
  private readonly data = new Map<number, V>();

  constructor(
    readonly name: string,
    /** Entries the map holds at most (a write beyond fails like the kernel's E2BIG). */
    private readonly maxEntries = Infinity,
  ) {}

  get(key: number): V | undefined {
    return this.data.get(key);
  }

  set(entries: readonly (readonly [number, V])[]): void {
    for (const [k, v] of entries) {
      if (this.data.size >= this.maxEntries && !this.data.has(k)) throw new Error(`${this.name} is full (${this.maxEntries} entries)`);
      this.data.set(k, v);
    }
  }

  delete(keys: readonly number[]): void {
    for (const k of keys) this.data.delete(k);
  }

  entries(): [number, V][] {
    return [...this.data];
  }

  /** Entry count. */
  get size(): number {
    return this.data.size;
  }
}

/** The LB maps in memory (the memory datapath's, and the tests'). */
export function memoryLBMaps(maxEntries = Infinity): LBMapSet {
  const svc = (name: string) => new MemoryServiceLBMap(name, maxEntries);
  const num = <V>(name: string) => new MemoryNumberLBMap<V>(name, maxEntries);
  return {
    services4: svc(LB_MAP_NAMES.services4),
    services6: svc(LB_MAP_NAMES.services6),
    backends4: num(LB_MAP_NAMES.backends4),
    backends6: num(LB_MAP_NAMES.backends6),
    revNat4: num(LB_MAP_NAMES.revNat4),
    revNat6: num(LB_MAP_NAMES.revNat6),
    maglev4: num(LB_MAP_NAMES.maglev4),
    maglev6: num(LB_MAP_NAMES.maglev6),
    affinityMatch: new MemoryLBMap<LBAffinityMatchKey, number>(LB_MAP_NAMES.affinityMatch, (k) => k.backendId * 65536 + k.revNat, maxEntries),
  };
}
