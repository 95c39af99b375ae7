/**
 * Conntrack garbage collection for the BPF datapath (Cilium's pkg/maps/ctmap/gc): expired entries
 * (lifetime < now) are swept from the four global maps, a batch lookup at a time, yielding to the
 * event loop between slices; the interval adapts like Cilium's (start 5 min; the larger the share
 * of a map deleted, the shorter, at least 10 s; under 5 % deleted, 1.5x longer, at most 12 h or
 * --conntrack-gc-max-interval; --conntrack-gc-interval pins it). The entries of a deleted
 * endpoint's addresses are scrubbed in the background (CNI DEL never waits for it); a load for an
 * address with a scrub pending waits for the scrub, so a new holder of the address never inherits
 * its connections. All work on the maps runs one piece at a time. Every run also accounts each
 * map's pressure (ct-pressure.ts: occupancy and the entries the kernel's LRU evicted); a run comes
 * early, GC_MIN_MS after the last at the soonest, once the datapath created enough entries to fill a
 * map or to make the last run's numbers stale, and a run that saw evictions brings the next one to
 * GC_MIN_MS (expired entries go before the kernel evicts live ones in their place).
 */
import { Subject } from 'rxjs';
import { CT_MAPS, monotonicSeconds, sweepAddresses, sweepExpired, type CtMapCounts, type CtMapName, type SweepResult } from '../../maps/index.js';
import { sleep } from '../../hive/timeout.js';
import { CtPressure } from './ct-pressure.js';
import type { KernelMaps } from './kernel-maps.js';

/** Cilium's defaults: the first interval, the floor, and the cap for LRU maps. */
export const GC_START_MS = 5 * 60_000;
export const GC_MIN_MS = 10_000;
export const GC_MAX_LRU_MS = 12 * 3_600_000;
/** How often the datapath's creation counters are read between runs (for an early run). */
export const GC_PROBE_MS = 2000;

/**
 * The next interval after a run (Cilium's calculateInterval): nothing deleted keeps it; over 25 %
 * of a map deleted shortens it by that share (at most 90 %), to GC_MIN_MS at least; under 5 %
 * makes it 1.5x longer, to `maxMs` at most. Whole seconds.
 */
export function nextGcInterval(prevMs: number, maxDeleteRatio: number, maxMs = GC_MAX_LRU_MS): number {
  const round = (ms: number): number => Math.round(ms / 1000) * 1000;
  if (maxDeleteRatio === 0) return Math.min(prevMs, maxMs);
  if (maxDeleteRatio > 0.25) return Math.max(round(prevMs * (1 - Math.min(maxDeleteRatio, 0.9))), GC_MIN_MS);
  if (maxDeleteRatio < 0.05) return Math.min(round(prevMs * 1.5), maxMs);
  return Math.min(prevMs, maxMs);
}

/** One map's part of a run. */
export interface GcReport {
  /** 'gc': expired entries; 'scrub': a deleted endpoint's addresses. */
  readonly kind: 'gc' | 'scrub';
  readonly map: CtMapName;
  readonly family: 'ipv4' | 'ipv6';
  readonly protocol: 'TCP' | 'non-TCP';
  readonly completed: boolean;
  readonly scanned: number;
  readonly deleted: number;
  readonly seconds: number;
  /** gc: the map's size, and the entries the kernel evicted since the previous run (ct-pressure.ts). */
  readonly maxEntries?: number;
  readonly evicted?: number;
  readonly error?: string;
}

/** What a run did, over the four maps. */
export interface GcRun {
  readonly at: number;
  readonly scanned: number;
  readonly deleted: number;
  readonly maxDeleteRatio: number;
  /** Entries the kernel evicted since the previous run, over the four maps. */
  readonly evicted: number;
  readonly ms: number;
  readonly errors: readonly string[];
}

/** Interval settings (ms; 0 = adaptive / Cilium's cap). */
export interface GcSettings {
  readonly intervalMs: number;
  readonly maxIntervalMs: number;
  /** Slice length between event-loop turns (default 5 ms). */
  readonly sliceMs?: number;
}

/** The conntrack garbage collector. */
export class CtGarbageCollector {
  /** Every map's result of every run and scrub (metrics subscribe). */
  readonly reports$ = new Subject<GcReport>();
  /** Occupancy and evictions, accounted at every run. */
  readonly pressure = new CtPressure();
  private queue: Promise<unknown> = Promise.resolve();
  private readonly scrubbing = new Map<string, Promise<void>>();
  private readonly ac = new AbortController();
  private interval: number;
  private last?: GcRun;
  private scrubbed = 0;

  constructor(private readonly kernel: KernelMaps, private readonly settings: GcSettings) {
    this.interval = settings.intervalMs || GC_START_MS;
  }

  /** The interval until the next run. */
  get intervalMs(): number {
    return this.interval;
  }

  /** The last run, if any. */
  get lastRun(): GcRun | undefined {
    return this.last;
  }

  /** Entries deleted by scrubs so far. */
  get scrubDeleted(): number {
    return this.scrubbed;
  }

  /** Queues `fn` behind the work already queued. */
  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.queue.then(() => {
      this.ac.signal.throwIfAborted();
      return fn();
    });
    this.queue = next.catch(() => undefined);
    return next;
  }

  /** Sweeps the expired entries of every map; computes the next interval. */
  collect(): Promise<GcRun> {
    return this.serial(async () => {
      const t0 = performance.now();
      const now = monotonicSeconds();
      let scanned = 0;
      let deleted = 0;
      let evicted = 0;
      let maxDeleteRatio = 0;
      const errors: string[] = [];
      for (const m of CT_MAPS) {
        const map = this.kernel.ct.maps[m.name].map;
        const r = await this.sweep('gc', m, () => sweepExpired(map, now, { sliceMs: this.settings.sliceMs, signal: this.ac.signal }));
        if (r.error) errors.push(`${m.name}: ${r.error}`);
        scanned += r.scanned;
        deleted += r.deleted;
        evicted += r.evicted ?? 0;
        maxDeleteRatio = Math.max(maxDeleteRatio, r.deleted / map.info.maxEntries);
      }
      if (!this.settings.intervalMs) {
        this.interval = evicted ? GC_MIN_MS : nextGcInterval(this.interval, maxDeleteRatio, this.settings.maxIntervalMs || GC_MAX_LRU_MS);
      }
      this.last = { at: Date.now(), scanned, deleted, maxDeleteRatio, evicted, ms: performance.now() - t0, errors };
      return this.last;
    });
  }

  /**
   * Runs one map's sweep, counts its deletes in cellium_ct_stats and, for a completed GC sweep (a
   * full scan), accounts the map's pressure; reports it.
   */
  private async sweep(kind: GcReport['kind'], m: (typeof CT_MAPS)[number], run: () => Promise<SweepResult>): Promise<GcReport> {
    const t0 = performance.now();
    const ct = this.kernel.ct;
    let r: SweepResult = { scanned: 0, deleted: 0 };
    let error: string | undefined;
    let pressure: { maxEntries: number; evicted: number } | undefined;
    // the counters serve the pressure accounting only: a failure to read them never stops a sweep
    const counts = (): CtMapCounts | undefined => {
      try {
        return ct.counts()[m.name];
      } catch {
        return undefined;
      }
    };
    try {
      const before = counts();
      r = await run();
      try {
        ct.countDeleted(m.name, r.deleted);
      } catch {
        // a GC run's own deletes are in its `alive`; a scrub's not counted would read as evictions at the next run
      }
      const after = counts();
      if (kind === 'gc' && before && after) pressure = this.pressure.account(m.name, ct.maps[m.name].map.info.maxEntries, before, r.scanned, r.deleted, after);
    } catch (err) {
      if (this.ac.signal.aborted) throw err;
      error = (err as Error).message;
    }
    const report: GcReport = {
      kind, map: m.name, family: m.family, protocol: m.tcp ? 'TCP' : 'non-TCP', completed: !error,
      scanned: r.scanned, deleted: r.deleted, seconds: (performance.now() - t0) / 1000,
      ...(pressure ? { maxEntries: pressure.maxEntries, evicted: pressure.evicted } : {}), ...(error ? { error } : {}),
    };
    this.reports$.next(report);
    return report;
  }

  /**
   * Deletes, in the background, the entries of every map naming one of `ips` (a deleted
   * endpoint's addresses). Resolves when done; never rejects (a failed sweep is reported).
   */
  scrub(ips: readonly string[]): Promise<void> {
    const wanted = ips.filter((ip) => ip);
    if (!wanted.length) return Promise.resolve();
    const done = this.serial(async () => {
      for (const m of CT_MAPS) {
        const map = this.kernel.ct.maps[m.name].map;
        const r = await this.sweep('scrub', m, () => sweepAddresses(map, m.family, wanted, { sliceMs: this.settings.sliceMs, signal: this.ac.signal }));
        this.scrubbed += r.deleted;
      }
    }).catch(() => undefined);
    for (const ip of wanted) this.scrubbing.set(ip, done);
    void done.then(() => {
      for (const ip of wanted) if (this.scrubbing.get(ip) === done) this.scrubbing.delete(ip);
    });
    return done;
  }

  /**
   * Whether a run is due: the interval passed since the last one, or GC_MIN_MS did and the datapath
   * created enough entries since to fill a map or to make the last numbers stale.
   */
  due(): boolean {
    if (!this.last) return true;
    const since = Date.now() - this.last.at;
    if (since >= this.interval) return true;
    if (since < Math.min(GC_MIN_MS, this.interval)) return false;
    try {
      return this.pressure.mayHaveGrown(this.kernel.ct.counts());
    } catch {
      return false;
    }
  }

  /** Resolves when a run is due (checked every GC_PROBE_MS); rejects when `signal` aborts. */
  async untilDue(signal?: AbortSignal): Promise<void> {
    while (!this.due()) await sleep(Math.min(GC_PROBE_MS, this.interval), signal);
  }

  /** Resolves once no scrub of any of `ips` is pending. */
  async settled(ips: readonly (string | undefined)[]): Promise<void> {
    await Promise.all(ips.map((ip) => (ip ? this.scrubbing.get(ip) : undefined)));
  }

  /** Aborts the work in progress and waits for it to stop (before the maps are closed). */
  async stop(): Promise<void> {
    this.ac.abort(new Error('the conntrack garbage collector stopped'));
    await this.queue;
    this.reports$.complete();
  }

  /** One line for the health tree. */
  describe(): string {
    const next = `next in ${Math.round(this.interval / 1000)}s${this.settings.intervalMs ? ' (pinned)' : ''}`;
    if (!this.last) return `conntrack GC: not run yet, ${next}`;
    const l = this.last;
    const errs = l.errors.length ? `, failing: ${l.errors.join('; ')}` : '';
    return `conntrack GC: last run deleted ${l.deleted} of ${l.scanned} entries in ${Math.round(l.ms)} ms, ${this.scrubbed} scrubbed for deleted endpoints, ${next}${errs}`;
  }
}
