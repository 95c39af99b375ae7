/**
 * Jobs: one-shot (with retry and backoff), timer (interval plus a debounced manual trigger) and
 * observer (subscribes an Observable). Each job has its own health scope. The hive starts jobs
 * after every start hook has run and stops them before any stop hook runs.
 */
import { exponentialBackoff } from '../lib/backoff.js';
import type { Observable, Subscription } from 'rxjs';
import { formatDuration } from './config/duration.js';
import { errorMessage, toError } from './errors.js';
import type { Health } from './health.js';
import type { Logger } from './logger.js';
import type { Shutdowner } from './shutdowner.js';
import { sleep } from './timeout.js';
import { token } from './token.js';

/** What a job function receives. */
export interface JobContext {
  /** Aborts when the hive stops. */
  readonly signal: AbortSignal;
  /** The job's own health scope. */
  readonly health: Health;
}

/** Options of a one-shot job. */
export interface OneShotOptions {
  /** How many times to retry after a failure (0 = no retry). */
  readonly retries?: number;
  /** Exponential backoff between retries, in ms. */
  readonly backoff?: { readonly minMs: number; readonly maxMs: number };
  /** Shut the hive down with the error when every try failed. */
  readonly shutdownOnError?: boolean;
}

/** Options of a timer job. */
export interface TimerOptions {
  /** Triggers within this many ms of each other coalesce into one run. */
  readonly debounceMs?: number;
}

/** Options of an observer job. */
export interface ObserverOptions {
  /**
   * Subscribe when the job is added (the cell's construction) instead of when the hive's jobs
   * start: for sources whose values during the start hooks matter (an identity allocated while
   * endpoints are restored). Named, with health and unsubscribed at stop like any job.
   */
  readonly immediate?: boolean;
  /**
   * Call the handler inside the source's `next`, not after the previous handler's promise: for
   * synchronous handlers whose effect callers rely on once `next` returns. A thrown error marks
   * the job degraded and the next value is still handled.
   */
  readonly sync?: boolean;
}

/** Runs a timer job now (after the debounce), outside its interval. */
export interface Trigger {
  trigger(): void;
}

/** Adds jobs to the module's job group. */
export interface Jobs {
  oneShot(name: string, fn: (ctx: JobContext) => Promise<void>, opts?: OneShotOptions): void;
  timer(name: string, fn: (ctx: JobContext) => Promise<void>, intervalMs: number, opts?: TimerOptions): Trigger;
  observer<T>(name: string, source: Observable<T>, fn: (value: T, ctx: JobContext) => Promise<void> | void, opts?: ObserverOptions): void;
}

/** Token for the module's job group. */
export const JobsToken = token<Jobs>('Jobs');

interface RunningJob {
  readonly name: string;
  start(signal: AbortSignal): void;
  /** Settles when the job's current run has finished. */
  done(): Promise<void>;
}

/** The jobs of one module. */
export class JobGroup implements Jobs {
  private readonly jobs: RunningJob[] = [];
  private ac?: AbortController;
  /** Aborted at stop, started or not: ends what immediate jobs subscribed at construction. */
  private readonly early = new AbortController();

  constructor(
    readonly module: string,
    private readonly health: Health,
    private readonly log: Logger,
    private readonly shutdowner: Shutdowner,
  ) {}

  /** Names of the jobs, for introspection. */
  names(): string[] {
    return this.jobs.map((j) => j.name);
  }

  /** See Jobs. */
  oneShot(name: string, fn: (ctx: JobContext) => Promise<void>, opts: OneShotOptions = {}): void {
    const h = this.health.scope(`job-${name}`);
    let running: Promise<void> = Promise.resolve();
    this.add({
      name,
      start: (signal) => {
        h.ok('running');
        running = this.runOneShot(name, fn, opts, { signal, health: h });
      },
      done: () => running,
    });
  }

  private async runOneShot(name: string, fn: (ctx: JobContext) => Promise<void>, opts: OneShotOptions, ctx: JobContext): Promise<void> {
    const retries = opts.retries ?? 0;
    const { minMs, maxMs } = opts.backoff ?? { minMs: 100, maxMs: 60_000 };
    for (let attempt = 0; ; attempt++) {
      try {
        await fn(ctx);
        ctx.health.ok('done');
        return;
      } catch (err) {
        if (ctx.signal.aborted) return;
        ctx.health.degraded(`attempt ${attempt + 1} failed: ${errorMessage(err)}`, toError(err));
        this.log.warn({ job: name, attempt: attempt + 1, err: errorMessage(err) }, 'one-shot job failed');
        if (attempt >= retries) {
          if (opts.shutdownOnError) this.shutdowner.shutdown(new Error(`job ${this.module}/${name} failed: ${errorMessage(err)}`));
          return;
        }
        try {
          await sleep(exponentialBackoff(attempt, minMs, maxMs), ctx.signal);
        } catch {
          return;
        }
      }
    }
  }

  /** See Jobs. */
  timer(name: string, fn: (ctx: JobContext) => Promise<void>, intervalMs: number, opts: TimerOptions = {}): Trigger {
    const h = this.health.scope(`timer-${name}`);
    let signal: AbortSignal | undefined;
    let timer: NodeJS.Timeout | undefined;
    let running: Promise<void> = Promise.resolve();
    let pending = false;
    const run = (): void => {
      clearTimeout(timer);
      timer = undefined;
      if (!signal || signal.aborted) return;
      if (pending) return;
      pending = true;
      running = running.then(async () => {
        pending = false;
        if (signal!.aborted) return;
        try {
          await fn({ signal: signal!, health: h });
          h.ok('ran');
        } catch (err) {
          h.degraded(`run failed: ${errorMessage(err)}`, toError(err));
          this.log.warn({ job: name, err: errorMessage(err) }, 'timer job failed');
        }
        if (!signal!.aborted && intervalMs > 0) timer = setTimeout(run, intervalMs);
      });
    };
    this.add({
      name,
      start: (s) => {
        signal = s;
        s.addEventListener('abort', () => clearTimeout(timer), { once: true });
        // scheduled and healthy until a run says otherwise (not `unknown` for a whole interval)
        h.ok(intervalMs > 0 ? `scheduled every ${formatDuration(intervalMs)}, not run yet` : 'runs when triggered, not run yet');
        if (intervalMs > 0) timer = setTimeout(run, intervalMs);
      },
      done: () => running,
    });
    return {
      trigger: () => {
        if (!signal || signal.aborted || pending) return;
        clearTimeout(timer);
        timer = setTimeout(run, opts.debounceMs ?? 0);
      },
    };
  }

  /** See Jobs. */
  observer<T>(name: string, source: Observable<T>, fn: (value: T, ctx: JobContext) => Promise<void> | void, opts: ObserverOptions = {}): void {
    const h = this.health.scope(`observer-${name}`);
    let sub: Subscription | undefined;
    let chain: Promise<void> = Promise.resolve();
    // an immediate job's handlers see the group's early signal until the hive starts its jobs
    let signal: AbortSignal = this.early.signal;
    const failed = (err: unknown): void => {
      h.degraded(`handler failed: ${errorMessage(err)}`, toError(err));
      this.log.warn({ job: name, err: errorMessage(err) }, 'observer job handler failed');
    };
    const handle = (v: T): void => {
      const ctx = { signal, health: h };
      if (opts.sync) {
        if (signal.aborted) return;
        try {
          const r: unknown = fn(v, ctx);
          // only a promise is awaited: a handler written as an expression may return what its
          // call returned (prom-client's inc() returns an object), which is no failure
          if (r instanceof Promise) r.catch(failed);
        } catch (err) {
          failed(err);
        }
        return;
      }
      chain = chain.then(async () => {
        if (signal.aborted) return;
        try {
          await fn(v, ctx);
        } catch (err) {
          failed(err);
        }
      });
    };
    const subscribe = (): void => {
      h.ok('subscribed');
      sub = source.subscribe({
        next: handle,
        error: (err: unknown) => h.degraded(`source failed: ${errorMessage(err)}`, toError(err)),
        complete: () => h.stopped('source completed'),
      });
    };
    if (opts.immediate) {
      subscribe();
      this.early.signal.addEventListener('abort', () => sub?.unsubscribe(), { once: true });
    }
    this.add({
      name,
      start: (s) => {
        signal = s;
        if (!opts.immediate) subscribe();
        s.addEventListener('abort', () => sub?.unsubscribe(), { once: true });
      },
      done: () => chain,
    });
  }

  private add(job: RunningJob): void {
    this.jobs.push(job);
    if (this.ac) job.start(this.ac.signal);
  }

  /** Starts every job (jobs added later start at once). */
  start(): void {
    this.ac = new AbortController();
    for (const j of this.jobs) j.start(this.ac.signal);
  }

  /** Aborts every job and waits for their current runs. */
  async stop(): Promise<void> {
    this.ac?.abort(new Error('hive stopping'));
    this.early.abort(new Error('hive stopping'));
    await Promise.all(this.jobs.map((j) => j.done().catch(() => undefined)));
    this.health.stopped('jobs stopped');
  }
}
