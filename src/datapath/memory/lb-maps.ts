/**
 * The in-memory load-balancing maps (the memory datapath's, and the tests'): the LBMapSet of
 * src/datapath/lb-maps.ts held in JavaScript maps, sized like the kernel's (a write beyond fails).
 */
import { LB_MAP_NAMES, type LBAffinityMatchKey, type LBMap, type LBMapSet, type LBServiceKey, type LBServiceValue } from '../lb-maps.js';

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
