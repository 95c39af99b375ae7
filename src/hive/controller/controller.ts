/**
 * A controller (Cilium's pkg/controller): a named function run until it succeeds, retried with
 * linear backoff (consecutive failures x error-retry base, capped), optionally re-run on an
 * interval, with a status record for the status API.
 */
import { linearBackoff } from '../../lib/backoff.js';
import { formatDuration } from '../config/duration.js';
import { errorMessage } from '../errors.js';

/** What a controller runs and how often. */
export interface ControllerParams {
  /** The work; throw (or reject) to fail this run. */
  readonly doFunc: (signal: AbortSignal) => Promise<void> | void;
  /** Re-run this often after a success (0: run until the first success only). */
  readonly runIntervalMs?: number;
  /** Base of the linear retry backoff after a failure (default 1 s). */
  readonly errorRetryBaseMs?: number;
  /** Cap of the retry backoff (default 1.5 min, Cilium's). */
  readonly maxRetryIntervalMs?: number;
  /** Called once when the controller is removed. */
  readonly stopFunc?: () => Promise<void> | void;
}

/** A controller's status record, field names as Cilium's ControllerStatus. */
export interface ControllerStatus {
  readonly name: string;
  readonly uuid: string;
  readonly configuration: { readonly interval: string; readonly 'error-retry-base': string; readonly 'error-retry': boolean };
  readonly status: {
    readonly 'success-count': number;
    readonly 'failure-count': number;
    readonly 'consecutive-failure-count': number;
    readonly 'last-success-timestamp'?: string;
    readonly 'last-failure-timestamp'?: string;
    readonly 'last-failure-msg'?: string;
    readonly 'last-duration-ms'?: number;
  };
}

let seq = 0;

/** One running controller. */
export class Controller {
  private params: ControllerParams;
  private readonly ac = new AbortController();
  private wake?: () => void;
  private successCount = 0;
  private failureCount = 0;
  private consecutiveFailures = 0;
  private lastSuccess?: Date;
  private lastFailure?: Date;
  private lastError?: string;
  private lastDurationMs?: number;
  private readonly uuid = `ctrl-${++seq}`;
  /** Settles when the run loop has exited. */
  readonly finished: Promise<void>;

  constructor(
    readonly name: string,
    params: ControllerParams,
  ) {
    this.params = params;
    this.finished = this.loop();
  }

  /** Replaces the parameters and runs now. */
  update(params: ControllerParams): void {
    this.params = params;
    this.trigger();
  }

  /** Runs now instead of waiting for the interval or the backoff. */
  trigger(): void {
    this.wake?.();
  }

  /** Stops the loop, then runs stopFunc. */
  async stop(): Promise<void> {
    this.ac.abort(new Error(`controller ${this.name} removed`));
    this.wake?.();
    await this.finished;
    await this.params.stopFunc?.();
  }

  /** Delay before the next try after `failures` consecutive failures (linear, capped). */
  static retryDelay(failures: number, baseMs: number, maxMs: number): number {
    return linearBackoff(failures, baseMs, maxMs);
  }

  private async loop(): Promise<void> {
    const signal = this.ac.signal;
    while (!signal.aborted) {
      const began = performance.now();
      let wait: number;
      try {
        await this.params.doFunc(signal);
        this.successCount++;
        this.consecutiveFailures = 0;
        this.lastSuccess = new Date();
        wait = this.params.runIntervalMs ?? 0;
        if (wait === 0) wait = Infinity;
      } catch (err) {
        if (signal.aborted) break;
        this.failureCount++;
        this.consecutiveFailures++;
        this.lastFailure = new Date();
        this.lastError = errorMessage(err);
        wait = Controller.retryDelay(this.consecutiveFailures, this.params.errorRetryBaseMs ?? 1000, this.params.maxRetryIntervalMs ?? 90_000);
      }
      this.lastDurationMs = performance.now() - began;
      await this.pause(wait, signal);
    }
  }

  private pause(ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.wake = undefined;
        resolve();
      };
      const timer = Number.isFinite(ms) ? setTimeout(done, ms) : undefined;
      this.wake = done;
      if (signal.aborted) done();
    });
  }

  /** The status record. */
  status(): ControllerStatus {
    const p = this.params;
    return {
      name: this.name,
      uuid: this.uuid,
      configuration: {
        interval: formatDuration(Number.isFinite(p.runIntervalMs) ? (p.runIntervalMs ?? 0) : 0),
        'error-retry-base': formatDuration(p.errorRetryBaseMs ?? 1000),
        'error-retry': true,
      },
      status: {
        'success-count': this.successCount,
        'failure-count': this.failureCount,
        'consecutive-failure-count': this.consecutiveFailures,
        'last-success-timestamp': this.lastSuccess?.toISOString(),
        'last-failure-timestamp': this.lastFailure?.toISOString(),
        'last-failure-msg': this.lastError,
        'last-duration-ms': this.lastDurationMs,
      },
    };
  }
}

