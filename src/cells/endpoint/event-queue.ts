/**
 * A per-endpoint serialized event queue (Cilium's eventqueue): events run one at a time in order.
 * Regeneration requests coalesce while one is queued and not yet running: the queued one takes the
 * highest level and every reason, and all callers wait for that single run.
 */
import { EndpointError } from './errors.js';
import type { RegenerationLevel } from './types.js';

/** A regeneration as the queue hands it to its runner. */
export interface RegenerationRequest {
  readonly level: RegenerationLevel;
  readonly reasons: readonly string[];
}

interface Pending {
  level: RegenerationLevel;
  reasons: string[];
  readonly promise: Promise<void>;
}

/** Orders levels: rewrite+load > no-rebuild. */
export function maxLevel(a: RegenerationLevel, b: RegenerationLevel): RegenerationLevel {
  return a === 'rewrite+load' || b === 'rewrite+load' ? 'rewrite+load' : 'no-rebuild';
}

/** The queue of one endpoint. */
export class EventQueue {
  private tail: Promise<unknown> = Promise.resolve();
  private pendingRegen?: Pending;
  private closedReason?: string;
  private queued = 0;

  constructor(private readonly name: string) {}

  /** How many events are queued or running. */
  get length(): number {
    return this.queued;
  }

  /** Whether a regeneration is queued and not yet running (new requests would join it). */
  get regenerationQueued(): boolean {
    return this.pendingRegen !== undefined;
  }

  /** Runs `fn` after every event enqueued before it; rejects when the queue is closed first. */
  enqueue<T>(what: string, fn: () => Promise<T>): Promise<T> {
    if (this.closedReason !== undefined) return Promise.reject(this.closedError(what));
    this.queued++;
    const run = this.tail.then(() => {
      if (this.closedReason !== undefined) throw this.closedError(what);
      return fn();
    });
    const settled = run.finally(() => this.queued--);
    this.tail = settled.catch(() => undefined);
    return settled;
  }

  /**
   * Queues a regeneration or joins the one already queued. `onQueued` runs only when a new one was
   * queued (callers use it to move the endpoint to waiting-to-regenerate).
   */
  enqueueRegeneration(
    reason: string,
    level: RegenerationLevel,
    run: (req: RegenerationRequest) => Promise<void>,
    onQueued?: () => void,
  ): Promise<void> {
    const p = this.pendingRegen;
    if (p) {
      p.level = maxLevel(p.level, level);
      if (!p.reasons.includes(reason)) p.reasons.push(reason);
      return p.promise;
    }
    if (this.closedReason !== undefined) return Promise.reject(this.closedError('regeneration'));
    const pending: { level: RegenerationLevel; reasons: string[] } = { level, reasons: [reason] };
    const promise = this.enqueue('regeneration', () => {
      this.pendingRegen = undefined;
      return run({ level: pending.level, reasons: [...pending.reasons] });
    });
    this.pendingRegen = Object.assign(pending, { promise });
    promise.catch(() => undefined).finally(() => {
      if (this.pendingRegen?.promise === promise) this.pendingRegen = undefined;
    });
    onQueued?.();
    return promise;
  }

  /** Refuses new events and makes queued ones fail; resolves once the running event finished. */
  async close(reason: string): Promise<void> {
    if (this.closedReason === undefined) this.closedReason = reason;
    this.pendingRegen = undefined;
    await this.tail;
  }

  /** Resolves once every event enqueued so far has settled. */
  async drain(): Promise<void> {
    await this.tail;
  }

  private closedError(what: string): EndpointError {
    return new EndpointError('failed', `${this.name}: ${what} cancelled: ${this.closedReason}`);
  }
}
