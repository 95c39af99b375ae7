/**
 * The agent's memory across service churn (issue 22 point 6): the agent as its own process
 * (bin/cellium-agent.js, its default datapath, run with --trace-gc), then rounds of 4,000 service
 * creates followed by their 4,000 deletes through the API on its unix socket, then an idle pause.
 * Printed after each step: the process's RSS and high-water mark (/proc/<pid>/status VmRSS, VmHWM)
 * and V8's heap as its last mark-compact left it (used and committed, from the --trace-gc lines):
 * the live heap tells a leak (it grows round after round) from a high-water mark (the live heap
 * goes back to where it started while RSS keeps the pages V8 and malloc grew into). Not a timed
 * test: the numbers are for reading. Needs root for the BPF datapath (CELLIUM_DATAPATH_MODE=memory
 * runs the memory one).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startAgent, scratchBase } from './lib/agent-process.js';
import { printTable } from './lib/report.js';

const ROUNDS = 3;
const SERVICES = 4000;
const IDLE_MS = 30_000;

/** VmRSS and VmHWM of a process, in MB. */
function rss(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key: string): number => Number(new RegExp(`^${key}:\\s+(\\d+) kB$`, 'm').exec(status)?.[1] ?? NaN);
  return { rss: Math.round(kb('VmRSS') / 1024), hwm: Math.round(kb('VmHWM') / 1024) };
}

/** The heap after the last mark-compact (`Mark-Compact 41.2 (60.5) -> 30.1 (47.0) MB`): used and committed, MB. */
class GcTrace {
  private text = '';
  last?: { used: number; committed: number };
  feed(chunk: string): void {
    this.text += chunk;
    const lines = this.text.split('\n');
    this.text = lines.pop() ?? '';
    for (const l of lines) {
      const m = /Mark-Compact(?: \(reduce\))? [\d.]+ \([\d.]+\) -> ([\d.]+) \(([\d.]+)\) MB/.exec(l);
      if (m) this.last = { used: Number(m[1]), committed: Number(m[2]) };
    }
  }
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(scratchBase(), 'cellium-bench-rss-'));
  const bpfRoot = `/sys/fs/bpf/cellium-bench-rss-${process.pid}`;
  const gc = new GcTrace();
  const agent = await startAgent({
    dir, bpfRoot, socketPath: join(dir, 'cellium.sock'), pool: '10.215.0.0/16',
    nodeFlags: ['--trace-gc'], onStdout: (c) => gc.feed(c),
  });
  const rows: (string | number)[][] = [];
  const sample = (step: string): void => {
    const m = rss(agent.pid);
    rows.push([step, m.rss, m.hwm, gc.last?.used ?? '-', gc.last?.committed ?? '-']);
  };
  try {
    await sleep(3000);
    sample('started');
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
  } finally {
    await agent.stop();
    rmSync(dir, { recursive: true, force: true });
    rmSync(bpfRoot, { recursive: true, force: true });
  }
  printTable(`Agent memory across ${ROUNDS} rounds of ${SERVICES} service creates and deletes`, ['step', 'RSS MB', 'RSS high-water MB', 'heap used after last mark-compact MB', 'heap committed MB'], rows);
}

await main();
