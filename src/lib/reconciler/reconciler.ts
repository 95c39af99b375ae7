/**
 * A reconciler in the manner of cilium/statedb's: applies a DesiredTable's changes to a target
 * incrementally and in batches as they come, retries failures with exponential backoff, and
 * periodically prunes what the target holds but nobody desires (and rewrites what drifted, compared
 * with the table's `equal`), so a map edited by hand or left behind by a crash converges. In a hive
 * it runs as a job (`run`, with the job's health scope); standalone, `start`/`stop`.
 */
import { exponentialBackoff } from '../backoff.js';
import { errorMessage } from '../errors.js';
import type { DesiredTable } from './table.js';

/** How to write to the target. Batch methods return the keys that failed with their errors. */
export interface ReconcileOps<V> {
  update(batch: readonly (readonly [string, V])[]): Promise<ReadonlyMap<string, Error>>;
  delete(keys: readonly string[]): Promise<ReadonlyMap<string, Error>>;
  /** What the target holds now (for pruning and drift repair). */
  list(): Promise<ReadonlyMap<string, V>>;
}

/** Reconciler settings. */
export interface ReconcilerOptions {
  readonly batchSize?: number;
  readonly retryMinMs?: number;
  readonly retryMaxMs?: number;
  /** Prune/full-sync interval (0 = never). */
  readonly pruneIntervalMs?: number;
  readonly onError?: (key: string, err: Error) => void;
}

/** Where a reconciler run as a job reports (a hive job's health scope fits). */
export interface ReconcilerHealth {
  ok(message: string): void;
  degraded(message: string): void;
}

/** What a reconciler run as a job receives (a hive JobContext fits). */
export interface ReconcilerJobContext {
  /** Stops the reconciler when aborted. */
  readonly signal: AbortSignal;
  /** Told the table's state after every round. */
  readonly health?: ReconcilerHealth;
}

/** Reconciler counters, for the status API. */
export interface ReconcilerStats {
  readonly rounds: number;
  readonly writes: number;
  readonly deletes: number;
  readonly failures: number;
  readonly prunes: number;
  readonly pruned: number;
  readonly repaired: number;
  readonly lastPruneAt?: string;
}

/** Writes a desired-state table to its target. */
export class Reconciler<V> {
  private running?: Promise<void>;
  private again = false;
  private kickQueued = false;
  private retryTimer?: NodeJS.Timeout;
  private pruneTimer?: NodeJS.Timeout;
  private stopped = true;
  private readonly waiters: (() => void)[] = [];
  private s = { rounds: 0, writes: 0, deletes: 0, failures: 0, prunes: 0, pruned: 0, repaired: 0, lastPruneAt: undefined as string | undefined };
  private sub?: { unsubscribe(): void };
  private health?: ReconcilerHealth;

  constructor(
    readonly table: DesiredTable<V>,
    private readonly ops: ReconcileOps<V>,
    private readonly opts: ReconcilerOptions = {},
  ) {}

  /** Starts reacting to changes (and the prune timer). */
  start(): void {
    this.stopped = false;
    this.sub = this.table.changes$.subscribe(() => this.kickSoon());
    const every = this.opts.pruneIntervalMs ?? 0;
    if (every > 0) {
      const tick = (): void => {
        this.pruneTimer = setTimeout(() => {
          void this.prune().finally(() => !this.stopped && tick());
        }, every);
      };
      tick();
    }
    this.kick();
  }

  /**
   * Runs the reconciler as a job (the hive's jobs run it; see JobGroup.oneShot): starts it, reports
   * the table's state to `ctx.health` after every round, and stops it once `ctx.signal` aborts.
   */
  async run(ctx: ReconcilerJobContext): Promise<void> {
    if (ctx.signal.aborted) return;
    this.health = ctx.health;
    this.start();
    this.reportHealth();
    await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
    await this.stop();
    this.health = undefined;
  }

  /** Stops; waits for the round in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.sub?.unsubscribe();
    clearTimeout(this.retryTimer);
    clearTimeout(this.pruneTimer);
    await this.running;
    for (const w of this.waiters.splice(0)) w();
  }

  /** Resolves once nothing is pending (failures waiting for a retry do not hold it up). */
  async flush(): Promise<void> {
    // A round that starts after this call writes what was desired at it; stopped or not, rounds go
    // through kick(), so a flush never runs one beside the round in progress.
    const target = this.s.rounds + 1;
    while (this.s.rounds < target || this.running) {
      this.kick();
      await this.running;
    }
  }

  /** Counters. */
  stats(): ReconcilerStats {
    return { ...this.s };
  }

  /**
   * Compares the target with the desired state: deletes what is not desired (unless `keep` spares
   * it), marks what is missing or different as pending (then writes it). Returns how many entries
   * were pruned and repaired.
   */
  async prune(keep?: (key: string) => boolean): Promise<{ pruned: number; repaired: number }> {
    const actual = await this.ops.list();
    const extra = [...actual.keys()].filter((k) => !this.table.get(k) && !keep?.(k));
    let repaired = 0;
    for (const o of this.table.all()) {
      const have = actual.get(o.key);
      if (o.state === 'done' && (have === undefined || !this.table.equal(have, o.value))) {
        this.table.markPending(o.key);
        repaired++;
      }
    }
    if (extra.length) {
      const failed = await this.ops.delete(extra);
      for (const [k, e] of failed) this.opts.onError?.(k, e);
    }
    this.s.prunes++;
    this.s.pruned += extra.length;
    this.s.repaired += repaired;
    this.s.lastPruneAt = new Date().toISOString();
    await this.flush();
    return { pruned: extra.length, repaired };
  }

  /** Kicks once the current synchronous burst of changes is over (one round writes the whole burst). */
  private kickSoon(): void {
    if (this.kickQueued) return;
    this.kickQueued = true;
    queueMicrotask(() => {
      this.kickQueued = false;
      if (!this.stopped) this.kick();
    });
  }

  private kick(): void {
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = (async () => {
      do {
        this.again = false;
        await this.roundOnce();
      } while (this.again && !this.stopped);
      this.running = undefined;
      this.scheduleRetry();
      this.reportHealth();
    })();
  }

  /** `cellium_lxc: 4/4 done`, or degraded with the failing objects' errors. */
  private reportHealth(): void {
    if (!this.health) return;
    const st = this.table.status();
    const line = `${st.name}: ${st.done}/${st.objects} done${st.pending ? `, ${st.pending} pending` : ''}`;
    if (st.errors) this.health.degraded(`${line}, ${st.errors} failing (retried with backoff): ${st.lastErrors.join('; ')}`);
    else this.health.ok(line);
  }

  private scheduleRetry(): void {
    clearTimeout(this.retryTimer);
    if (this.stopped) return;
    const next = this.table.nextRetryAt();
    if (next !== undefined) this.retryTimer = setTimeout(() => this.kick(), Math.max(0, next - Date.now()));
  }

  private async roundOnce(): Promise<void> {
    this.s.rounds++;
    const size = this.opts.batchSize ?? 256;
    const dels = this.table.deletions();
    for (let i = 0; i < dels.length; i += size) {
      const batch = dels.slice(i, i + size);
      const failed = await this.ops.delete(batch).catch((e: unknown) => new Map(batch.map((k) => [k, e as Error])));
      for (const k of batch) {
        const e = failed.get(k);
        if (e) this.opts.onError?.(k, e);
        else this.s.deletes++;
        // a failed delete of something that is gone is not retried; prune catches leftovers
        this.table.deleted(k);
      }
    }
    const due = this.table.due();
    for (let i = 0; i < due.length; i += size) {
      const batch = due.slice(i, i + size).map((o) => [o.key, o.value] as const);
      const failed = await this.ops.update(batch).catch((e: unknown) => new Map(batch.map(([k]) => [k, e as Error])));
      for (const [k, v] of batch) {
        const e = failed.get(k);
        if (!e) {
          this.table.markDone(k, v);
          this.s.writes++;
          continue;
        }
        const o = this.table.get(k);
        const delay = exponentialBackoff(o?.failures ?? 0, this.opts.retryMinMs ?? 50, this.opts.retryMaxMs ?? 60_000);
        this.table.markError(k, errorMessage(e), Date.now() + delay);
        this.s.failures++;
        this.opts.onError?.(k, e);
      }
    }
  }
}
