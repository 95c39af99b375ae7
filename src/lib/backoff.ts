/** Retry delays, the one place they are computed (jobs, reconcilers, controllers). */

/** Exponential: `minMs` doubled per earlier failure, capped at `maxMs` (`failures` 0 gives `minMs`). */
export function exponentialBackoff(failures: number, minMs: number, maxMs: number): number {
  return Math.min(maxMs, minMs * 2 ** Math.max(0, failures));
}

/** Linear, as Cilium's controllers wait: `failures` x `baseMs`, capped at `maxMs`. */
export function linearBackoff(failures: number, baseMs: number, maxMs: number): number {
  return Math.min(failures * baseMs, maxMs);
}
