/**
 * bpf_lxc's own time per packet without traffic (lib/lxc-run-cost.ts: BPF_PROG_TEST_RUN on crafted
 * IPv4 TCP frames, the four runs of a request/response round trip), the shared program against a
 * copy per endpoint, and against another build of the object when CELLIUM_BENCH_LXC_BASELINE names
 * one (e.g. the main branch's build/bpf/bpf_lxc.o): a before/after figure of a datapath change in
 * one run, alternating rounds. The part of datapath-traffic that needs no traffic tools, for quick
 * iterations. Needs root and BPF; skips with one line otherwise.
 */
import { bpfAvailable } from '../src/bpf/index.js';
import { baselineObject } from './lib/pod-programs.js';
import { lxcRunCost, printRunCost } from './lib/lxc-run-cost.js';

const ROUNDS = Number(process.env.CELLIUM_BENCH_LXC_ROUNDS ?? 9);

async function main(): Promise<void> {
  const a = bpfAvailable();
  if (process.getuid?.() !== 0 || !a.ok) {
    console.log(`lxc-cost: skipped: ${a.ok ? 'needs root' : `BPF unavailable: ${a.reason}`}`);
    return;
  }
  const baseline = baselineObject();
  printRunCost(await lxcRunCost({ rounds: ROUNDS, baselineObject: baseline }), baseline !== undefined, ROUNDS);
}

await main();
