/**
 * The agent's memory across service churn (issue 22 point 6): the agent as its own process
 * (bin/cellium-agent.js, its default datapath, run with --trace-gc and --heapsnapshot-signal), then
 * rounds of 4,000 service creates followed by their 4,000 deletes through the API on its unix
 * socket, then an idle pause. Printed after each step: the process's RSS and high-water mark
 * (/proc/<pid>/status VmRSS, VmHWM), V8's heap as the last mark-compact left it (used and
 * committed, from the --trace-gc lines) and the size of the service store
 * (<state-dir>/services.json, rewritten whole on every change). At the start and at the end the
 * live heap too: a heap snapshot is taken (SIGUSR2; written to the run's scratch directory and
 * removed), which runs a full garbage collection first, and its mark-compact line gives the heap
 * after it; RSS is read again after it (the snapshot's own native memory is in both of those
 * readings, so they compare with each other, not with the rows between). The heap tells a leak (it
 * grows round after round) from a high-water mark (it goes back to where it started while RSS keeps
 * the pages V8 and malloc grew into). MALLOC_ARENA_MAX and the other glibc variables pass through
 * to the agent, to see what malloc keeps. Not a timed
 * test: the numbers are for reading. Needs root for the BPF datapath (CELLIUM_DATAPATH_MODE=memory
 * runs the memory one).
 */
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { rss, startAgent, scratchBase } from './lib/agent-process.js';
import { printTable } from './lib/report.js';

/** Rounds (CELLIUM_BENCH_ROUNDS overrides, e.g. 1 for a quick look). */
const ROUNDS = Number(process.env.CELLIUM_BENCH_ROUNDS ?? 3);
const SERVICES = 4000;
const IDLE_MS = 30_000;

/** The heap after the last mark-compact (`Mark-Compact 41.2 (60.5) -> 30.1 (47.0) MB`): used and committed, MB. */
class GcTrace {
  private text = '';
  /** Mark-compacts seen so far. */
  count = 0;
  last?: { used: number; committed: number };
  feed(chunk: string): void {
    this.text += chunk;
    const lines = this.text.split('\n');
    this.text = lines.pop() ?? '';
    for (const l of lines) {
      const m = /Mark-Compact(?: \(reduce\))? [\d.]+ \([\d.]+\) -> ([\d.]+) \(([\d.]+)\) MB/.exec(l);
      if (m) {
        this.last = { used: Number(m[1]), committed: Number(m[2]) };
        this.count++;
      }
    }
  }
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(scratchBase(), 'cellium-bench-rss-'));
  const bpfRoot = `/sys/fs/bpf/cellium-bench-rss-${process.pid}`;
  const gc = new GcTrace();
  const agent = await startAgent({
    dir, bpfRoot, socketPath: join(dir, 'cellium.sock'), pool: '10.215.0.0/16',
    nodeFlags: ['--trace-gc', '--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${dir}`], onStdout: (c) => gc.feed(c),
  });
  const snapshots = (): string[] => readdirSync(dir).filter((f) => f.endsWith('.heapsnapshot'));
  /** The heap after the full GC of a heap snapshot (the snapshot is removed once written). */
  const liveHeap = async (): Promise<{ used: number; committed: number } | undefined> => {
    const before = gc.count;
    process.kill(agent.pid, 'SIGUSR2');
    for (let i = 0; i < 600 && gc.count === before; i++) await sleep(100);
    const seen = gc.count > before ? gc.last : undefined;
    // the snapshot is written after the collection; wait until its size stops changing
    let size = -1;
    for (let i = 0; i < 600; i++) {
      await sleep(250);
      const files = snapshots();
      const now = files.reduce((n, f) => n + statSync(join(dir, f)).size, 0);
      if (files.length && now === size) break;
      size = now;
    }
    for (const f of snapshots()) rmSync(join(dir, f));
    return seen;
  };
  const rows: (string | number)[][] = [];
  const store = (): number => {
    try {
      return Math.round(statSync(join(dir, 'state', 'services.json')).size / 1024);
    } catch {
      return 0;
    }
  };
  const sample = (step: string): void => {
    const m = rss(agent.pid);
    rows.push([step, m.rss, m.hwm, gc.last?.used ?? '-', gc.last?.committed ?? '-', store()]);
  };
  /** A full GC (through a heap snapshot), then RSS: comparable only with another such row. */
  const afterFullGc = async (step: string): Promise<void> => {
    const heap = await liveHeap();
    await sleep(2000);
    const m = rss(agent.pid);
    rows.push([`${step}, after a full GC`, m.rss, m.hwm, heap?.used ?? '-', heap?.committed ?? '-', store()]);
  };
  try {
    await sleep(3000);
    sample('started');
    await afterFullGc('started');
    for (let round = 1; round <= ROUNDS; round++) {
      for (let i = 1; i <= SERVICES; i++) {
        const ip = `10.96.${Math.floor(i / 250)}.${(i % 250) + 1}`;
        await agent.client.putService(i, { 'frontend-address': { ip, port: 80, protocol: 'tcp' }, 'backend-addresses': [{ ip: `10.215.${Math.floor(i / 250)}.${(i % 250) + 1}`, port: 8080 }] });
      }
      sample(`round ${round}: ${SERVICES} created`);
      for (let i = 1; i <= SERVICES; i++) await agent.client.deleteService(i);
      sample(`round ${round}: deleted`);
    }
    await sleep(IDLE_MS);
    sample(`idle ${IDLE_MS / 1000} s`);
    await afterFullGc('end');
  } finally {
    await agent.stop();
    rmSync(dir, { recursive: true, force: true });
    rmSync(bpfRoot, { recursive: true, force: true });
  }
  printTable(`Agent memory across ${ROUNDS} rounds of ${SERVICES} service creates and deletes`, ['step', 'RSS MB', 'RSS high-water MB', 'heap used after the last mark-compact MB', 'heap committed MB', 'services.json KiB'], rows);
  console.log('Rows "after a full GC" include the heap snapshot\'s own native memory: compare them with each other.');
}

await main();
