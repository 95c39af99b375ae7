/**
 * Kernel BPF run statistics for the packet-path benches: the time the kernel spends in a
 * program per run (`kernel.bpf_stats_enabled`, read through bpftool), so a bench can report the
 * datapath's own cost per packet next to throughput figures that the rest of the stack dominates.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';

const SYSCTL = '/proc/sys/kernel/bpf_stats_enabled';

/** Turns the kernel's BPF run statistics on; returns the function that restores the previous setting. */
export function enableBpfStats(): () => void {
  const before = readFileSync(SYSCTL, 'utf8').trim();
  writeFileSync(SYSCTL, '1');
  return () => writeFileSync(SYSCTL, before);
}

/** The IDs of the tc programs attached to `dev` in network namespace `ns`. */
export function tcProgramIds(ns: string, dev: string): number[] {
  const out = JSON.parse(execFileSync('ip', ['netns', 'exec', ns, 'bpftool', 'net', 'show', 'dev', dev, '-j'], { encoding: 'utf8' })) as { tc?: { id: number }[]; tcx?: { id: number }[] }[];
  return out.flatMap((o) => [...(o.tc ?? []), ...(o.tcx ?? [])].map((p) => p.id));
}

/** Total run time (ns) and run count of programs `ids`, summed. */
export function runStats(ids: readonly number[]): { ns: number; runs: number } {
  let ns = 0;
  let runs = 0;
  for (const id of ids) {
    const p = JSON.parse(execFileSync('bpftool', ['prog', 'show', 'id', String(id), '-j'], { encoding: 'utf8' })) as { run_time_ns?: number; run_cnt?: number };
    ns += p.run_time_ns ?? 0;
    runs += p.run_cnt ?? 0;
  }
  return { ns, runs };
}

/** Runs `fn` and returns its result with the programs' mean ns per run meanwhile (NaN without runs). */
export async function nsPerRun<T>(ids: readonly number[], fn: () => Promise<T>): Promise<{ value: T; nsPerRun: number }> {
  const a = runStats(ids);
  const value = await fn();
  const b = runStats(ids);
  return { value, nsPerRun: b.runs > a.runs ? (b.ns - a.ns) / (b.runs - a.runs) : NaN };
}
