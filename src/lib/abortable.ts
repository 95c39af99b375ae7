/** Waiting on a promise that may never settle (a cache that never syncs) without holding up a stop. */

/** `p`, or a rejection with the signal's reason as soon as `signal` aborts (the hive stopping a job). */
export function abortable<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
