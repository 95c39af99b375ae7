/**
 * Conntrack pressure: how full each global conntrack map is and how many entries the kernel's LRU
 * evicted from it. The kernel reports LRU evictions nowhere (no error, no counter: the insert
 * succeeds and some other entry is gone), so they are counted by accounting: between two
 * garbage-collection scans of a map,
 *
 *   entries then + created by the datapath - deleted by userspace - entries now = evicted
 *
 * with `created` and `deleted by userspace` from cellium_ct_stats (bpf_lxc counts a key it adds
 * that was not there; the GC, scrubs and `cellium bpf ct flush` count what they delete) and the
 * entries from the scans. A scan is not atomic: an entry the datapath adds while it runs is
 * counted as created in the next period or not at all, but may be seen by a scan, which lowers the
 * difference: the count is a lower bound, never a false alarm, and exact when no traffic runs
 * during the scans. The kernel evicts only when the table has no free entry left, and the GC
 * removes expired entries at every run, so what is evicted was alive at the last run or created
 * since: a connection in use (or one that expired since that run, which the GC's shorter interval
 * under pressure keeps rare).
 */
import type { CtMapCounts, CtMapName } from '../../maps/index.js';

/** Occupancy above which the datapath's health is degraded (share of a map's entries). */
export const CT_PRESSURE_DEGRADED = 0.9;

/**
 * Entries the datapath may add since the last scan before an early run (besides the room left):
 * at least this many, or half the entries the map held.
 */
export const CT_GROWTH_FLOOR = 128;

/** One map's pressure at the end of a GC run. */
export interface CtMapPressure {
  readonly map: CtMapName;
  readonly maxEntries: number;
  /** Entries left after the run. */
  readonly alive: number;
  /** Entries the kernel evicted since the previous run (a lower bound; 0 at the first run). */
  readonly evicted: number;
}

interface Baseline {
  readonly alive: number;
  readonly maxEntries: number;
  readonly counts: CtMapCounts;
}

/** The accounting of every map across runs. */
export class CtPressure {
  private readonly base = new Map<CtMapName, Baseline>();
  private readonly last = new Map<CtMapName, CtMapPressure>();
  private readonly totals = new Map<CtMapName, number>();

  /**
   * Accounts one map's scan: `before` the counts read just before it, `scanned` the entries it saw,
   * `deleted` the expired ones it removed, `after` the counts read once it finished.
   */
  account(map: CtMapName, maxEntries: number, before: CtMapCounts, scanned: number, deleted: number, after: CtMapCounts): CtMapPressure {
    const prev = this.base.get(map);
    let evicted = 0;
    // counters that went back: cellium_ct_stats was recreated, the accounting starts over
    if (prev && prev.maxEntries === maxEntries && before.created >= prev.counts.created && before.userDeleted >= prev.counts.userDeleted) {
      evicted = Math.max(0, prev.alive + (before.created - prev.counts.created) - (before.userDeleted - prev.counts.userDeleted) - scanned);
    }
    const alive = scanned - deleted;
    this.base.set(map, { alive, maxEntries, counts: after });
    const p: CtMapPressure = { map, maxEntries, alive, evicted };
    this.last.set(map, p);
    this.totals.set(map, (this.totals.get(map) ?? 0) + evicted);
    return p;
  }

  /** Entries evicted from `map` since the agent started (as far as the runs saw). */
  evictedTotal(map: CtMapName): number {
    return this.totals.get(map) ?? 0;
  }

  /**
   * Whether the datapath added, since the last run, as many entries as a map had room for (it may
   * be evicting now) or as half what it held (the last run's numbers are stale): a run is due.
   */
  mayHaveGrown(counts: Readonly<Record<CtMapName, CtMapCounts>>): boolean {
    for (const [map, b] of this.base) {
      const added = counts[map].created - b.counts.created;
      if (added >= b.maxEntries - b.alive || added >= Math.max(CT_GROWTH_FLOOR, b.alive / 2)) return true;
    }
    return false;
  }

  /** The maps' state after the last run: degraded while one evicts or is fuller than CT_PRESSURE_DEGRADED. */
  state(): { readonly degraded: boolean; readonly message: string } {
    const maps = [...this.last.values()];
    if (!maps.length) return { degraded: false, message: 'conntrack: not scanned yet' };
    const hot = maps.filter((p) => p.evicted > 0 || p.alive >= CT_PRESSURE_DEGRADED * p.maxEntries);
    const line = (p: CtMapPressure): string =>
      `${p.map} ${p.alive}/${p.maxEntries} (${Math.round((100 * p.alive) / p.maxEntries)}%), ${p.evicted} evicted since the last run, ${this.evictedTotal(p.map)} in all`;
    if (!hot.length) {
      const total = maps.reduce((n, p) => n + this.evictedTotal(p.map), 0);
      return { degraded: false, message: `conntrack: ${maps.map((p) => `${p.map} ${p.alive}/${p.maxEntries}`).join(', ')}; ${total} evicted in all` };
    }
    const flags = [...new Set(hot.map((p) => (p.map.includes('_any') ? '--bpf-ct-global-any-max' : '--bpf-ct-global-tcp-max')))];
    return {
      degraded: true,
      message: `conntrack table under pressure: ${hot.map(line).join('; ')}: live connections lose their entries (replies are judged by policy again); raise ${flags.join(' and ')}`,
    };
  }
}
