/**
 * One API rate limiter (Cilium's pkg/rate APILimiter): a token bucket (rate, burst) and a cap on
 * parallel requests, with queueing up to a maximum wait, then refusal (RateLimitedError -> 429).
 * With auto-adjust, rate, burst and parallel requests follow the ratio of the estimated to the
 * mean processing duration, within maxAdjustmentFactor of their base values.
 */
import { sleep } from '../../../hive/timeout.js';
import { RateLimitedError } from '../errors.js';
import type { LimiterParams } from './params.js';

/** What the limiter reports after each request (Cilium's MetricsValues). */
export interface LimiterReport {
  readonly name: string;
  /** Seconds the request waited (0 when refused before waiting). */
  readonly waitSeconds: number;
  /** Seconds it took to process (0 when refused). */
  readonly processingSeconds: number;
  readonly meanWaitSeconds: number;
  readonly meanProcessingSeconds: number;
  readonly estimatedProcessingSeconds: number;
  readonly minWaitSeconds: number;
  readonly maxWaitSeconds: number;
  readonly parallelRequests: number;
  readonly inFlight: number;
  readonly limit: number;
  readonly burst: number;
  readonly adjustmentFactor: number;
  /** `success`, `fail` (handler error status) or `rate-limited` (refused). */
  readonly outcome: 'success' | 'fail' | 'rate-limited';
  readonly returnCode: number;
}

/** A request let through; call done() with the answer's status when it is processed. */
export interface LimitedRequest {
  readonly waitMs: number;
  done(status: number): void;
}

interface Waiter {
  resolve(): void;
  reject(err: Error): void;
}

const mean = (xs: readonly number[]): number => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);

/** The limiter of one API. */
export class ApiLimiter {
  private tokens: number;
  private last = performance.now();
  private limit: number;
  private burst: number;
  private parallel: number;
  private inFlight = 0;
  private scheduled = 0;
  private adjustment = 1;
  private readonly processing: number[] = [];
  private readonly waits: number[] = [];
  private readonly queue: Waiter[] = [];

  constructor(
    readonly name: string,
    readonly params: LimiterParams,
    private readonly report: (r: LimiterReport) => void = () => undefined,
  ) {
    this.limit = params.rateLimit;
    this.burst = Math.max(1, params.rateBurst);
    this.tokens = this.burst;
    this.parallel = params.parallelRequests;
  }

  /** Current values, for status and tests. */
  snapshot(): { limit: number; burst: number; parallelRequests: number; inFlight: number; queued: number; adjustmentFactor: number } {
    return { limit: this.limit, burst: this.burst, parallelRequests: this.parallel, inFlight: this.inFlight, queued: this.queue.length, adjustmentFactor: this.adjustment };
  }

  /**
   * Waits for a slot. Rejects with RateLimitedError when the wait would exceed max-wait-duration,
   * or with the signal's reason when the caller goes away while waiting.
   */
  async wait(signal?: AbortSignal): Promise<LimitedRequest> {
    signal?.throwIfAborted();
    const start = performance.now();
    this.scheduled++;
    const p = this.params;
    if (p.skipInitial > 0 && this.scheduled <= p.skipInitial) return this.admit(0);
    let delayMs = 0;
    let reserved = false;
    if (this.limit > 0) {
      this.refill();
      this.tokens -= 1;
      reserved = true;
      delayMs = this.tokens < 0 ? (-this.tokens / this.limit) * 1000 : 0;
    }
    const cancel = (): void => {
      if (reserved) this.tokens = Math.min(this.burst, this.tokens + 1);
      reserved = false;
    };
    delayMs = Math.max(delayMs, p.minWaitMs);
    if (p.maxWaitMs > 0 && delayMs > p.maxWaitMs) {
      cancel();
      throw this.refuse(`request would have to wait ${fmtMs(delayMs)} to be served (maximum wait duration: ${fmtMs(p.maxWaitMs)})`, delayMs);
    }
    try {
      if (delayMs > 0) await sleep(delayMs, signal);
      if (this.parallel > 0 && (this.inFlight >= this.parallel || this.queue.length > 0)) {
        const budget = p.maxWaitMs > 0 ? p.maxWaitMs - (performance.now() - start) : Infinity;
        await this.queueForSlot(budget, signal);
        return this.admit(performance.now() - start, true);
      }
    } catch (err) {
      cancel();
      throw err;
    }
    return this.admit(performance.now() - start);
  }

  /** Lets a request through; `counted` when wake() already took its slot. */
  private admit(waitMs: number, counted = false): LimitedRequest {
    if (!counted) this.inFlight++;
    const began = performance.now();
    let finished = false;
    return {
      waitMs,
      done: (status: number) => {
        if (finished) return;
        finished = true;
        this.finish(waitMs, performance.now() - began, status);
      },
    };
  }

  private queueForSlot(budgetMs: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const cleanup = (): void => {
        if (timer) clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        const i = this.queue.indexOf(waiter);
        if (i >= 0) this.queue.splice(i, 1);
      };
      const waiter: Waiter = {
        resolve: () => {
          cleanup();
          resolve();
        },
        reject: (e) => {
          cleanup();
          reject(e);
        },
      };
      const onAbort = (): void => waiter.reject(signal!.reason instanceof Error ? signal!.reason : new Error('aborted'));
      signal?.addEventListener('abort', onAbort, { once: true });
      if (Number.isFinite(budgetMs)) {
        timer = setTimeout(() => {
          const retryMs = Math.max(1000, mean(this.processing) * 1000);
          waiter.reject(this.refuse(`timed out while waiting to be served with ${this.parallel} parallel requests`, retryMs));
        }, Math.max(0, budgetMs));
      }
      this.queue.push(waiter);
    });
  }

  private finish(waitMs: number, processingMs: number, status: number): void {
    this.inFlight--;
    push(this.processing, processingMs / 1000, this.params.meanOver);
    push(this.waits, waitMs / 1000, this.params.meanOver);
    const p = this.params;
    if (p.autoAdjust && p.estimatedProcessingMs > 0) this.adjust();
    this.emit(waitMs, processingMs, status < 400 ? 'success' : 'fail', status);
    this.wake();
  }

  /** Cilium's auto-adjustment: factor = estimated / mean processing, applied fully to the rate and partly to burst and parallelism. */
  private adjust(): void {
    const p = this.params;
    const meanProcessing = Math.max(mean(this.processing), 1e-6);
    this.adjustment = clamp((p.estimatedProcessingMs / 1000) / meanProcessing, 1 / p.maxAdjustmentFactor, p.maxAdjustmentFactor);
    const within = (v: number, base: number): number => Math.max(base / p.maxAdjustmentFactor, Math.min(base * p.maxAdjustmentFactor, v));
    const delayed = (base: number, min: number, max: number): number => {
      let n = base + (base * this.adjustment - base) * p.delayedAdjustmentFactor;
      if (min > 0 && n < min) n = min;
      if (max > 0 && n > max) n = max;
      return n;
    };
    this.parallel = Math.trunc(within(delayed(p.parallelRequests, p.minParallelRequests, p.maxParallelRequests), p.parallelRequests));
    if (p.rateLimit > 0) {
      this.refill();
      this.limit = within(p.rateLimit * this.adjustment, p.rateLimit);
      this.burst = Math.max(1, Math.round(within(delayed(p.rateBurst, p.minParallelRequests, 0), p.rateBurst)));
      this.tokens = Math.min(this.tokens, this.burst);
    }
  }

  private wake(): void {
    while (this.queue.length && (this.parallel <= 0 || this.inFlight < this.parallel)) {
      this.inFlight++;
      this.queue[0]!.resolve();
    }
  }

  private refill(): void {
    const now = performance.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.limit);
    this.last = now;
  }

  private refuse(message: string, retryMs: number): RateLimitedError {
    this.emit(0, 0, 'rate-limited', 429);
    return new RateLimitedError(this.name, `${this.name}: ${message}`, Math.max(1, Math.ceil(retryMs / 1000)));
  }

  private emit(waitMs: number, processingMs: number, outcome: LimiterReport['outcome'], returnCode: number): void {
    const p = this.params;
    this.report({
      name: this.name,
      waitSeconds: waitMs / 1000,
      processingSeconds: processingMs / 1000,
      meanWaitSeconds: mean(this.waits),
      meanProcessingSeconds: mean(this.processing),
      estimatedProcessingSeconds: p.estimatedProcessingMs / 1000,
      minWaitSeconds: p.minWaitMs / 1000,
      maxWaitSeconds: p.maxWaitMs / 1000,
      parallelRequests: this.parallel,
      inFlight: this.inFlight,
      limit: this.limit,
      burst: this.burst,
      adjustmentFactor: this.adjustment,
      outcome,
      returnCode,
    });
  }
}

function push(xs: number[], v: number, max: number): void {
  xs.push(v);
  if (xs.length > max) xs.splice(0, xs.length - max);
}

function clamp(v: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, v));
}

function fmtMs(ms: number): string {
  return ms >= 1000 ? `${(ms / 1000).toFixed(ms % 1000 ? 3 : 0)}s` : `${Math.round(ms)}ms`;
}
