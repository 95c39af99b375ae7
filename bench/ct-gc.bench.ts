/**
 * Conntrack garbage collection of 500k entries (half of them expired) in the BPF datapath's maps:
 * the collector as the agent runs it (slices of 5 ms between event-loop turns) against the same
 * sweep done in one go, measured side by side: wall time, entries per second, and the longest the
 * event loop was blocked, measured by a 1 ms probe timer between its ticks three ways: the main
 * thread's CPU time (the event loop's own work: the goal, no block over 20 ms), the process's CPU
 * time (adds V8's compiler and heap threads, which run beside the loop, not in it), and wall time
 * (adds the time the process waited for a CPU on a loaded machine). Also the scrub of one deleted
 * endpoint's address over the same maps. The fill's garbage is collected before each measure (it
 * is the bench's, not the collector's). Needs root (BPF); skips otherwise.
 */
import { readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { randomBytes } from 'node:crypto';
import { bpfAvailable } from '../src/bpf/index.js';
import { ctEntryCodec, ctKey4Codec, monotonicSeconds } from '../src/maps/index.js';
import { bpfDatapathConfigSchema, CtGarbageCollector, KernelMaps, type BpfDatapathConfig } from '../src/cells/datapath-bpf/index.js';
import { printTable, ratio } from './lib/report.js';

const N = 500_000;
const ROOT = `/sys/fs/bpf/cellium-bench-gc-${randomBytes(3).toString('hex')}`;

function config(): BpfDatapathConfig {
  const defaults = Object.fromEntries(Object.entries(bpfDatapathConfigSchema).map(([k, f]) => [k, f.default])) as unknown as BpfDatapathConfig;
  return { ...defaults, bpfRoot: ROOT, bpfCtGlobalTcpMax: 524288, bpfCtGlobalAnyMax: 1024, bpfLxcMapMax: 1024, bpfIpcacheMapMax: 1024 };
}

/** Fills cellium_ct4_global with N distinct entries, every other one expired; one in 1000 names 10.99.0.1. */
function fill(kernel: KernelMaps): void {
  const map = kernel.ct.maps.cellium_ct4_global.map;
  const now = monotonicSeconds();
  const chunk = 50_000;
  const keys = Buffer.alloc(14 * chunk);
  const values = Buffer.alloc(56 * chunk);
  for (let base = 0; base < N; base += chunk) {
    for (let i = 0; i < chunk; i++) {
      const n = base + i;
      const daddr = n % 1000 === 0 ? '10.99.0.1' : `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;
      ctKey4Codec.encode({ family: 'ipv4', daddr, saddr: '10.200.0.1', dport: 80, sport: 1024 + (n % 1000 === 0 ? n / 1000 : n % 60000), nexthdr: 6, flags: n & 1 }, keys, i * 14);
      ctEntryCodec.encode({ rxPackets: 1, rxBytes: 60, txPackets: 1, txBytes: 60, lifetime: n % 2 ? now - 5 : now + 3600, flags: 0x10, revNat: 0, txFlagsSeen: 0x12, rxFlagsSeen: 0x12, srcSecId: 1000, lastTxReport: 0, lastRxReport: 0 }, values, i * 56);
    }
    map.updateBatch(keys, values, chunk);
  }
}

/**
 * The main thread's CPU time, ms: its sum_exec_runtime in /proc/thread-self/schedstat, brought up
 * to date first (getrusage of the process, process.cpuUsage, accounts the calling thread's pending
 * run time; read alone, the file lags by up to a scheduler tick, 4 ms here).
 */
function mainThreadCpuMs(): number {
  process.cpuUsage();
  return Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[0]) / 1e6;
}

/** The longest gaps between ticks of a 1 ms timer: in main-thread CPU, process CPU and wall time. */
interface Blocks {
  readonly threadMs: number;
  readonly cpuMs: number;
  readonly wallMs: number;
}

/** A 1 ms timer recording the longest gap between its ticks (see Blocks). */
function probe(): { stop: () => Blocks } {
  let lastWall = performance.now();
  let lastCpu = process.cpuUsage();
  let lastThread = mainThreadCpuMs();
  let wallMs = 0;
  let cpuMs = 0;
  let threadMs = 0;
  const tick = (): void => {
    const wall = performance.now();
    const cpu = process.cpuUsage(lastCpu);
    const thread = mainThreadCpuMs();
    wallMs = Math.max(wallMs, wall - lastWall);
    cpuMs = Math.max(cpuMs, (cpu.user + cpu.system) / 1000);
    threadMs = Math.max(threadMs, thread - lastThread);
    lastWall = wall;
    lastThread = thread;
    lastCpu = process.cpuUsage();
  };
  const timer = setInterval(tick, 1);
  return {
    stop: () => {
      tick();
      clearInterval(timer);
      return { wallMs, cpuMs, threadMs };
    },
  };
}

async function measure(sliceMs: number, what: (gc: CtGarbageCollector) => Promise<unknown>): Promise<{ ms: number; blocks: Blocks; deleted: number; scanned: number }> {
  const kernel = new KernelMaps(config());
  kernel.open();
  try {
    fill(kernel);
    (globalThis as { gc?: () => void }).gc?.(); // the fill's garbage (npm run bench passes --expose-gc)
    const gc = new CtGarbageCollector(kernel, { intervalMs: 0, maxIntervalMs: 0, sliceMs });
    let deleted = 0;
    let scanned = 0;
    gc.reports$.subscribe((r) => {
      deleted += r.deleted;
      scanned += r.scanned;
    });
    const p = probe();
    const t0 = performance.now();
    await what(gc);
    const ms = performance.now() - t0;
    const blocks = p.stop();
    await gc.stop();
    return { ms, blocks, deleted, scanned };
  } finally {
    kernel.close();
    rmSync(ROOT, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const avail = bpfAvailable();
  if (process.getuid?.() !== 0 || !avail.ok) {
    console.log(`ct-gc: skipped: ${avail.ok ? 'needs root' : avail.reason}`);
    return;
  }
  const sliced = await measure(5, (gc) => gc.collect());
  const oneGo = await measure(Number.POSITIVE_INFINITY, (gc) => gc.collect());
  const scrub = await measure(5, (gc) => gc.scrub(['10.99.0.1']));
  const row = (name: string, r: typeof sliced, vs?: typeof sliced): (string | number)[] => [
    name, r.scanned, r.deleted, r.ms, Math.round(r.scanned / (r.ms / 1000)), r.blocks.threadMs, r.blocks.cpuMs, r.blocks.wallMs, vs ? ratio(r.ms, vs.ms) : '',
  ];
  printTable(`conntrack GC of ${N.toLocaleString('en-US')} entries (half expired) in cellium_ct4_global: sliced as the agent runs it vs one blocking pass`, ['run', 'scanned', 'deleted', 'time (ms)', 'entries/s', 'longest block, main thread CPU (ms, goal <= 20)', 'same, process CPU (ms)', 'same, wall (ms)', 'time vs one pass'], [
    row('GC, 5 ms slices (agent)', sliced, oneGo),
    row('GC, one pass (baseline)', oneGo),
    row('scrub of one endpoint address, 5 ms slices', scrub),
  ]);
  console.log(`\nload average while measuring: ${loadavg().map((l) => l.toFixed(1)).join(' ')} on ${cpus().length} CPUs (a wall block over the CPU one is time spent waiting for a CPU; process CPU over the main thread's is V8's threads beside the loop)`);
}

await main();
