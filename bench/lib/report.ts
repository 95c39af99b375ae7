/**
 * Benchmark helpers shared by every bench/*.bench.ts: timing, percentiles and table output.
 * Benchmarks print tables with a baseline measured in the same run; they never assert.
 */
import { cpus, loadavg } from 'node:os';

/** The machine's load as a table title says it: `load 3.2 on 2 cores` (the 1-minute load average). */
export function machineLoad(): string {
  return `load ${loadavg()[0]!.toFixed(1)} on ${cpus().length} cores`;
}

/** Summary statistics of a list of durations in ms. */
export interface Stats {
  readonly n: number;
  readonly meanMs: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly minMs: number;
  readonly maxMs: number;
}

/** Computes statistics over durations in ms. */
export function stats(samples: readonly number[]): Stats {
  const s = [...samples].sort((a, b) => a - b);
  const at = (q: number): number => s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? NaN;
  return {
    n: s.length,
    meanMs: s.reduce((a, b) => a + b, 0) / (s.length || 1),
    p50Ms: at(0.5),
    p99Ms: at(0.99),
    minMs: s[0] ?? NaN,
    maxMs: s.at(-1) ?? NaN,
  };
}

/** Runs `fn` `n` times (after `warmup` untimed runs) and returns per-run durations in ms. */
export async function sample(n: number, fn: (i: number) => unknown, warmup = Math.min(5, n)): Promise<number[]> {
  for (let i = 0; i < warmup; i++) await fn(i);
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await fn(i);
    out.push(performance.now() - t0);
  }
  return out;
}

/** Times one call of `fn` in ms. */
export async function time(fn: () => unknown): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

/** The middle sample (the upper one of an even count). */
export function median(v: readonly number[]): number {
  const s = [...v].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/** Formats a number for a table cell. */
export function fmt(x: number, digits = 3): string {
  if (!Number.isFinite(x)) return String(x);
  if (Math.abs(x) >= 1000) return Math.round(x).toLocaleString('en-US');
  return x.toPrecision(digits);
}

/** Prints a titled table with aligned columns. */
export function printTable(title: string, header: readonly string[], rows: readonly (readonly (string | number)[])[]): void {
  const cells = rows.map((r) => r.map((c) => (typeof c === 'number' ? fmt(c) : c)));
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((r) => (r[i] ?? '').length)));
  const line = (r: readonly string[]): string => `| ${r.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  console.log(`\n### ${title}\n`);
  console.log(line(header));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const r of cells) console.log(line(r));
}

/** "0.42x" ratio text with the target check, e.g. ratio(ours, baseline, '<= 0.5x'). */
export function ratio(ours: number, baseline: number, target?: string): string {
  const r = ours / baseline;
  return `${r.toFixed(2)}x${target ? ` (target ${target})` : ''}`;
}

/**
 * Runs every program once per round for `runs` rounds (after 10 untimed rounds), so drift of the
 * machine or of Node's JIT hits every program alike; ms per program.
 */
export async function interleaved(runs: number, programs: Array<() => Promise<void>>): Promise<number[][]> {
  const out = programs.map(() => [] as number[]);
  for (let round = -10; round < runs; round++) {
    for (const [i, program] of programs.entries()) {
      const t0 = performance.now();
      await program();
      if (round >= 0) out[i]!.push(performance.now() - t0);
    }
  }
  return out;
}
