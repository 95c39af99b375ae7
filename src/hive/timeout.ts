/** Runs a step with an AbortSignal and a time limit. */
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

/** Resolves after `ms`, or rejects early when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(t);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
