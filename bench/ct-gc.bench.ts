/**
 * Conntrack garbage collection of 500k entries (half of them expired) in the BPF datapath's maps:
 * the collector as the agent runs it (slices of 5 ms between event-loop turns) against the same
 * sweep done in one go, measured side by side: wall time, entries per second, and the longest the
 * event loop was blocked, measured by a 1 ms probe timer as wall time between its ticks and as the
 * process's CPU time between them (on a loaded machine the wall gap includes time the process
 * waited for a CPU; the CPU time is the slice's own work). Goal: no block over 20 ms. Also the
 * scrub of one deleted endpoint's address over the same maps. Needs root (BPF); skips otherwise.
 */
import { rmSync } from 'node:fs';
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

/** Fills cellium_ct4_global with N entries, every other one expired; one in 1000 names 10.99.0.1. */
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
      ctKey4Codec.encode({ family: 'ipv4', daddr, saddr: '10.200.0.1', dport: 80, sport: 1024 + (n % 60000), nexthdr: 6, flags: n & 1 }, keys, i * 14);
      ctEntryCodec.encode({ rxPackets: 1, rxBytes: 60, txPackets: 1, txBytes: 60, lifetime: n % 2 ? now - 5 : now + 3600, flags: 0x10, revNat: 0, txFlagsSeen: 0x12, rxFlagsSeen: 0x12, srcSecId: 1000, lastTxReport: 0, lastRxReport: 0 }, values, i * 56);
    }
    map.updateBatch(keys, values, chunk);
  }
}

/** A 1 ms timer recording the longest gap between its ticks, in wall and in process CPU time. */
function probe(): { stop: () => { wallMs: number; cpuMs: number } } {
  let lastWall = performance.now();
  let lastCpu = process.cpuUsage();
  let wallMs = 0;
  let cpuMs = 0;
  const tick = (): void => {
    const wall = performance.now();
    const cpu = process.cpuUsage(lastCpu);
    wallMs = Math.max(wallMs, wall - lastWall);
    cpuMs = Math.max(cpuMs, (cpu.user + cpu.system) / 1000);
    lastWall = wall;
    lastCpu = process.cpuUsage();
  };
  const timer = setInterval(tick, 1);
  return {
    stop: () => {
      tick();
      clearInterval(timer);
      return { wallMs, cpuMs };
    },
  };
}

async function measure(sliceMs: number, what: (gc: CtGarbageCollector) => Promise<unknown>): Promise<{ ms: number; maxBlockMs: number; maxBusyMs: number; deleted: number; scanned: number }> {
  const kernel = new KernelMaps(config());
  kernel.open();
  try {
    fill(kernel);
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
    return { ms, maxBlockMs: blocks.wallMs, maxBusyMs: blocks.cpuMs, deleted, scanned };
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
    name, r.scanned, r.deleted, r.ms, Math.round(r.scanned / (r.ms / 1000)), r.maxBusyMs, r.maxBlockMs, vs ? ratio(r.ms, vs.ms) : '',
  ];
  printTable(`conntrack GC of ${N.toLocaleString('en-US')} entries (half expired) in cellium_ct4_global: sliced as the agent runs it vs one blocking pass`, ['run', 'scanned', 'deleted', 'time (ms)', 'entries/s', 'longest block, CPU (ms, goal <= 20)', 'longest block, wall (ms)', 'time vs one pass'], [
    row('GC, 5 ms slices (agent)', sliced, oneGo),
    row('GC, one pass (baseline)', oneGo),
    row('scrub of one endpoint address, 5 ms slices', scrub),
  ]);
  console.log(`\nload average while measuring: ${loadavg().map((l) => l.toFixed(1)).join(' ')} on ${cpus().length} CPUs (a wall block over the CPU one is time spent waiting for a CPU)`);
}

await main();
