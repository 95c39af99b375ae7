/** Runs a step with an AbortSignal and a time limit, on Node's own timers/promises and AbortSignal. */
import { setTimeout as delay } from 'node:timers/promises';
import { TimeoutError } from './errors.js';

/**
 * Runs `fn` with a signal that aborts after `ms` (with a TimeoutError) or when `parent` aborts;
 * rejects with the TimeoutError when `fn` has not settled by then. The time limit is a
 * timers/promises delay, cancelled through its own signal once `fn` settles. Not
 * `AbortSignal.timeout`: its timer is unref'd, so a hook hanging on nothing the event loop holds
 * would let the process exit silently instead of failing the start with this error.
 */
export async function withTimeout<T>(what: string, ms: number, fn: (signal: AbortSignal) => T | Promise<T>, parent?: AbortSignal): Promise<T> {
  const timedOut = new AbortController();
  const signal = parent ? AbortSignal.any([timedOut.signal, parent]) : timedOut.signal;
  const settled = new AbortController();
  const limit = delay(ms, undefined, { signal: settled.signal }).then(() => {
    const err = new TimeoutError(what, ms);
    timedOut.abort(err);
    throw err;
  });
  try {
    return await Promise.race([Promise.resolve().then(() => fn(signal)), limit]);
  } finally {
    settled.abort(); // the delay rejects with an AbortError nobody awaits any more (race handled it)
  }
}

/** Resolves after `ms`, or rejects early with the signal's reason when `signal` aborts (timers/promises). */
export async function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  try {
    await delay(ms, undefined, signal ? { signal } : undefined);
  } catch (err) {
    throw signal?.aborted ? signal.reason : err;
  }
}
