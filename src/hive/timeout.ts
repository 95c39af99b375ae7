/** Runs a step with an AbortSignal and a time limit. */
import { setTimeout as delay } from 'node:timers/promises';
import { TimeoutError } from './errors.js';

/** Runs `fn` with a signal that aborts after `ms` (or when `parent` aborts); rejects on timeout. */
export async function withTimeout<T>(what: string, ms: number, fn: (signal: AbortSignal) => T | Promise<T>, parent?: AbortSignal): Promise<T> {
  const ac = new AbortController();
  const onParentAbort = (): void => ac.abort(parent?.reason);
  parent?.addEventListener('abort', onParentAbort, { once: true });
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const err = new TimeoutError(what, ms);
      ac.abort(err);
      reject(err);
    }, ms);
  });
  try {
    return await Promise.race([Promise.resolve().then(() => fn(ac.signal)), timeout]);
  } finally {
    clearTimeout(timer);
    parent?.removeEventListener('abort', onParentAbort);
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
