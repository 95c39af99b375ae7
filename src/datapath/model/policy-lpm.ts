/**
 * An in-memory policy LPM table that behaves like the kernel's BPF_MAP_TYPE_LPM_TRIE for the
 * policy map's keys (src/maps/policy/key.ts): the memory datapath's policy maps, and the table
 * the BPF datapath's verdicts read the kernel's entries into.
 */
import type { PolicyEntry } from '../types.js';
import { expandPolicy, maskPolicyKeyData, packPolicyKeyData, type PolicyLpmEntry } from '../../maps/policy/key.js';

/**
 * An in-memory policy LPM table with the kernel trie's semantics: a lookup returns the entry
 * with the longest prefix whose leading bits equal the query's.
 */
export class PolicyLpm {
  private readonly byPrefix = new Map<number, Map<bigint, PolicyLpmEntry>>();
  private prefixes: number[] = [];

  /** Builds the table from LPM entries (later entries overwrite earlier ones with the same key). */
  constructor(entries: readonly PolicyLpmEntry[] = []) {
    for (const e of entries) this.set(e);
  }

  /** Builds the table of a PolicyEntry list (expandPolicy, then the table). */
  static fromPolicy(entries: readonly PolicyEntry[]): PolicyLpm {
    return new PolicyLpm(expandPolicy(entries));
  }

  /** Inserts or replaces one entry. */
  set(e: PolicyLpmEntry): void {
    let m = this.byPrefix.get(e.key.prefixLen);
    if (!m) {
      this.byPrefix.set(e.key.prefixLen, (m = new Map()));
      this.prefixes = [...this.byPrefix.keys()].sort((a, b) => b - a);
    }
    m.set(maskPolicyKeyData(packPolicyKeyData(e.key), e.key.prefixLen), e);
  }

  /** Number of entries. */
  get size(): number {
    let n = 0;
    for (const m of this.byPrefix.values()) n += m.size;
    return n;
  }

  /** The most specific entry matching a packet's (direction, identity, protocol, dport), if any. */
  lookup(egress: boolean, identity: number, protocol: number, dport: number): PolicyLpmEntry | undefined {
    const data = packPolicyKeyData({ egress, identity, protocol, dport });
    for (const p of this.prefixes) {
      const hit = this.byPrefix.get(p)!.get(maskPolicyKeyData(data, p));
      if (hit) return hit;
    }
    return undefined;
  }
}
