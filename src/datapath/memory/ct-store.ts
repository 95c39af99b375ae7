/** The memory datapath's conntrack store (the kernel's is src/maps/ct). */
import { Proto } from '../types.js';
import type { CtEntry, CtKey, CtStore } from '../conntrack.js';
import { ctKeyId } from '../model/conntrack.js';

/**
 * The memory datapath's store: the four maps as one table (the key names family and protocol),
 * least recently used entries evicted beyond `maxEntries` per kind, like the kernel's LRU maps.
 */
export class MemoryCtStore implements CtStore {
  private readonly tables = { tcp: new Map<string, [CtKey, CtEntry]>(), any: new Map<string, [CtKey, CtEntry]>() };

  constructor(private readonly maxEntries: { readonly tcp: number; readonly any: number } = { tcp: 524288, any: 262144 }) {}

  private table(k: CtKey): Map<string, [CtKey, CtEntry]> {
    return k.nexthdr === Proto.TCP ? this.tables.tcp : this.tables.any;
  }

  /** See CtStore (a hit becomes the most recently used). */
  get(key: CtKey): CtEntry | undefined {
    const t = this.table(key);
    const id = ctKeyId(key);
    const hit = t.get(id);
    if (!hit) return undefined;
    t.delete(id);
    t.set(id, hit);
    return hit[1];
  }

  /** See CtStore (never fails: the least recently used entry makes room). */
  set(key: CtKey, entry: CtEntry): boolean {
    const t = this.table(key);
    const id = ctKeyId(key);
    t.delete(id);
    t.set(id, [key, entry]);
    const max = key.nexthdr === Proto.TCP ? this.maxEntries.tcp : this.maxEntries.any;
    while (t.size > max) t.delete(t.keys().next().value!);
    return true;
  }

  /** Every entry. */
  entries(): [CtKey, CtEntry][] {
    return [...this.tables.tcp.values(), ...this.tables.any.values()].map(([k, e]) => [k, e]);
  }

  /** Deletes the entries `drop` picks; returns how many. */
  deleteWhere(drop: (k: CtKey, e: CtEntry) => boolean): number {
    let n = 0;
    for (const t of Object.values(this.tables)) {
      for (const [id, [k, e]] of t) {
        if (drop(k, e)) {
          t.delete(id);
          n++;
        }
      }
    }
    return n;
  }

  /** Entries held. */
  get size(): number {
    return this.tables.tcp.size + this.tables.any.size;
  }
}
