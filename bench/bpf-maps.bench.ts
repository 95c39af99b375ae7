/**
 * BPF map operations from Node (src/bpf BpfMap over the addon) against a C program doing the same
 * bpf() syscalls (bench/c/bpf-map-ops.c, compiled with cc -lbpf in this run): single update and
 * lookup, batch update and batch lookup, on a hash map of 4-byte keys and 8-byte values.
 * Rates are ops per second of process CPU time on both sides (a busy machine does not skew them).
 * Targets: single >= 0.7x the C ops/s, batch >= 0.9x. Needs root (CAP_BPF); skips otherwise.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BpfMap, MapType, bpfAvailable } from '../src/bpf/index.js';
import { packageRoot } from '../src/bpf/native.js';
import { printTable, ratio } from './lib/report.js';

const N = 100_000;
const ROUNDS = 5;
const ALTERNATIONS = 3;

interface Ops {
  updateSingle: number;
  lookupSingle: number;
  updateBatch: number;
  lookupBatch: number;
}

function median(v: number[]): number {
  const s = [...v].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/** Ops per second of process CPU time (user + system), like the C side's CLOCK_PROCESS_CPUTIME_ID. */
function opsPerSec(n: number, fn: () => void): number {
  const t0 = process.cpuUsage();
  fn();
  const d = process.cpuUsage(t0);
  return n / ((d.user + d.system) / 1e6);
}

function node(): Ops {
  const m = BpfMap.create({ name: 'cellium_bench', type: MapType.HASH, keySize: 4, valueSize: 8, maxEntries: N });
  try {
    const keys = Buffer.alloc(4 * N);
    const values = Buffer.alloc(8 * N);
    for (let i = 0; i < N; i++) {
      keys.writeUInt32LE(i, 4 * i);
      values.writeBigUInt64LE(BigInt(i * 3), 8 * i);
    }
    const k = Buffer.alloc(4);
    const v = Buffer.alloc(8);
    const out = Buffer.alloc(8);
    const r: Record<keyof Ops, number[]> = { updateSingle: [], lookupSingle: [], updateBatch: [], lookupBatch: [] };
    for (let round = 0; round < ROUNDS; round++) {
      r.updateSingle.push(opsPerSec(N, () => {
        for (let i = 0; i < N; i++) {
          k.writeUInt32LE(i, 0);
          v.writeUInt32LE(i * 3, 0);
          m.update(k, v);
        }
      }));
      r.lookupSingle.push(opsPerSec(N, () => {
        for (let i = 0; i < N; i++) {
          k.writeUInt32LE(i, 0);
          m.lookup(k, out);
        }
      }));
      r.updateBatch.push(opsPerSec(N, () => m.updateBatch(keys, values, N)));
      r.lookupBatch.push(opsPerSec(N, () => {
        if (m.lookupAll(N).count !== N) throw new Error('batch lookup missed entries');
      }));
    }
    return { updateSingle: median(r.updateSingle), lookupSingle: median(r.lookupSingle), updateBatch: median(r.updateBatch), lookupBatch: median(r.lookupBatch) };
  } finally {
    m.close();
  }
}

function c(bin: string): Ops {
  return JSON.parse(execFileSync(bin, [String(N), String(ROUNDS)], { encoding: 'utf8' })) as Ops;
}

/** Medians per operation over several runs. */
function medians(runs: Ops[]): Ops {
  const pick = (k: keyof Ops): number => median(runs.map((r) => r[k]));
  return { updateSingle: pick('updateSingle'), lookupSingle: pick('lookupSingle'), updateBatch: pick('updateBatch'), lookupBatch: pick('lookupBatch') };
}

function main(): void {
  const avail = bpfAvailable();
  if (!avail.ok) {
    console.log(`bpf-maps: skipped: ${avail.reason}`);
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), 'cellium-bench-'));
  const cRuns: Ops[] = [];
  const nodeRuns: Ops[] = [];
  try {
    const bin = join(dir, 'bpf-map-ops');
    execFileSync('cc', ['-O2', '-o', bin, join(packageRoot(), 'bench', 'c', 'bpf-map-ops.c'), '-lbpf']);
    // Interleaved, so both sides see the same machine load.
    for (let i = 0; i < ALTERNATIONS; i++) {
      cRuns.push(c(bin));
      nodeRuns.push(node());
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const base = medians(cRuns);
  const ours = medians(nodeRuns);
  const row = (what: string, key: keyof Ops, target: string): (string | number)[] => [what, ours[key], base[key], ratio(ours[key], base[key], target)];
  printTable(`bpf maps: ${N.toLocaleString('en-US')} entries, hash 4B key / 8B value, median over ${ALTERNATIONS} interleaved C and Node runs of ${ROUNDS} rounds (ops per CPU second)`, ['operation', 'node (src/bpf)', 'C (libbpf)', 'node / C'], [
    row('update, single', 'updateSingle', '>= 0.7x'),
    row('lookup, single', 'lookupSingle', '>= 0.7x'),
    row('update, batch', 'updateBatch', '>= 0.9x'),
    row('lookup, batch', 'lookupBatch', '>= 0.9x'),
  ]);
}

main();
