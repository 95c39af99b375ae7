/**
 * The BPF datapath at scale (issue 27): the `cellium-agent` process (--datapath-mode=bpf, API rate
 * limiter off) creates an endpoint on each of 4,000 real veths (CELLIUM_BENCH_SCALE_ENDPOINTS),
 * 32 requests in flight over its API socket, with --bpf-lxc-program=shared; measured: the create
 * rate, the agent's RSS, the kernel memory of this agent's programs and maps (bpftool, memlock),
 * and 250 rules selecting every endpoint imported until every endpoint realized them (wall time and
 * the agent's CPU time over it). Baseline in
 * the same run: per-endpoint programs on the first 400 of the veths
 * (CELLIUM_BENCH_SCALE_BASELINE, 0 for none; at 4,000 they would take 8,000 programs); the rules
 * phase takes CELLIUM_BENCH_SCALE_RULES rules (0 skips it). The bench's own share: the same
 * requests sent to a server answering at once (its rate and the client's CPU per request). Conntrack maps are
 * sized 65,536 (their preallocation is not what is measured). Needs root and BPF; never asserts.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { BpfMap } from '../src/bpf/bpf-map.js';
import { bpfAvailable } from '../src/bpf/index.js';
import { IPCACHE_MAP } from '../src/datapath/map-names.js';
import { cpuMs, rss, scratchBase, startAgent, threadCpuMs, threadCpuPer, type AgentProcess, type ThreadCpu } from './lib/agent-process.js';
import { clientAlone } from './lib/canned-server.js';
import { printTable, ratio } from './lib/report.js';
import { benchRules, createVeths, endpointRequest, type Veth } from './lib/veths.js';

const N = Number(process.env.CELLIUM_BENCH_SCALE_ENDPOINTS ?? 4000);
const BASELINE = Math.min(N, Number(process.env.CELLIUM_BENCH_SCALE_BASELINE ?? 400));
const IN_FLIGHT = 32;
/** Rules imported after the creations (CELLIUM_BENCH_SCALE_RULES; 0 skips that phase). */
const RULES = Number(process.env.CELLIUM_BENCH_SCALE_RULES ?? 250);
/** How long the rules may take to be realized before the run reports them unrealized (and goes on). */
const RULES_TIMEOUT_MS = Number(process.env.CELLIUM_BENCH_SCALE_RULES_TIMEOUT_MS ?? 120_000);
type Program = 'per-endpoint' | 'shared';

/** What one agent measured. */
interface Scale {
  readonly n: number;
  readonly createMs: number;
  /** The agent's CPU time (user + system) over the creations, per endpoint. */
  readonly cpuPerEndpointMs: number;
  /** The same split by thread (the agent's main thread, its other threads) and user/system. */
  readonly threads: ThreadCpu;
  /** This bench process's own CPU time (user + system) over the creations, per endpoint: the client's share. */
  readonly clientCpuPerEndpointMs: number;
  readonly rssMiB: number;
  readonly programs: number;
  readonly programKiB: number;
  readonly mapKiB: number;
  /** Until every endpoint realized the rules, or a text saying how far they got. */
  readonly rules: number | string;
  /** The agent's CPU time (user + system, all threads) from the import until every endpoint realized the rules. */
  readonly rulesCpuMs: number;
  /** The agent's RSS once the rules phase ended, and its peak (VmHWM) over the run. */
  readonly rulesRssMiB: number;
  readonly peakRssMiB: number;
  /** Kernel memory of the maps once the rules phase ended (the policy maps hold the rules). */
  readonly rulesMapKiB: number;
}

/** The agent's answer to the last creation (the canned answer of the client-alone run). */
let lastAnswer: unknown;

/** Creates an endpoint per veth with IN_FLIGHT requests at once; resolves with the wall time. */
async function createAll(agent: AgentProcess, run: string, veths: readonly Veth[]): Promise<number> {
  let next = 0;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: IN_FLIGHT }, async () => {
    for (let i = next++; i < veths.length; i = next++) lastAnswer = await agent.client.createEndpoint(0, endpointRequest(run, veths[i]!, i, '10.96'));
  }));
  return performance.now() - t0;
}

/** Kernel memory (memlock, KiB) of the programs that use this agent's ipcache, and of their maps plus the pinned policy maps. */
function kernelMemory(bpfRoot: string): { programs: number; programKiB: number; mapKiB: number } {
  const ipcache = BpfMap.openPinned(join(bpfRoot, IPCACHE_MAP));
  const ipcacheId = ipcache.info.id;
  ipcache.close();
  const progs = (JSON.parse(execFileSync('bpftool', ['prog', 'show', '-j'], { encoding: 'utf8', maxBuffer: 256 << 20 })) as { id: number; map_ids?: number[]; bytes_memlock?: number }[])
    .filter((p) => p.map_ids?.includes(ipcacheId));
  const mapIds = new Set(progs.flatMap((p) => p.map_ids ?? []));
  for (const f of readdirSync(bpfRoot).filter((f) => f.startsWith('cellium_policy_'))) {
    const m = BpfMap.openPinned(join(bpfRoot, f));
    mapIds.add(m.info.id);
    m.close();
  }
  const maps = JSON.parse(execFileSync('bpftool', ['map', 'show', '-j'], { encoding: 'utf8', maxBuffer: 256 << 20 })) as { id: number; bytes_memlock?: number }[];
  const mapBytes = maps.filter((m) => mapIds.has(m.id)).reduce((a, m) => a + (m.bytes_memlock ?? 0), 0);
  return { programs: progs.length, programKiB: progs.reduce((a, p) => a + (p.bytes_memlock ?? 0), 0) / 1024, mapKiB: mapBytes / 1024 };
}

/** Imports the rules over the API and waits until every endpoint realized them (at most RULES_TIMEOUT_MS). */
async function rules(agent: AgentProcess): Promise<number | string> {
  const t0 = performance.now();
  const timeout = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), RULES_TIMEOUT_MS).unref());
  const put = await Promise.race([agent.client.putPolicy(benchRules(RULES)), timeout]);
  if (put === 'timeout') return `the import did not answer within ${RULES_TIMEOUT_MS} ms`;
  let done = 0;
  while (performance.now() - t0 < RULES_TIMEOUT_MS) {
    // a few numbers the agent keeps (GET /endpoint would be ~100 MB of JSON at 4,000 endpoints,
    // built by the agent being measured): polled every 10 ms, the figure is at most 10 ms late
    const now = await agent.client.policyRealized(put.revision);
    done = now.realized;
    if (done === now.endpoints) return performance.now() - t0;
    await new Promise((r) => setTimeout(r, 10));
  }
  return `${done} endpoints realized them within ${RULES_TIMEOUT_MS} ms`;
}

async function measure(program: Program, run: string, veths: readonly Veth[], cleanup: (what: string, fn: () => unknown) => void): Promise<Scale> {
  const dir = mkdtempSync(join(scratchBase(), `cellium-bench-scale-${program}-`));
  const bpfRoot = `/sys/fs/bpf/cellium-bench-scale-${run}-${program}`;
  cleanup(`removing ${dir}`, () => rmSync(dir, { recursive: true, force: true }));
  cleanup(`removing ${bpfRoot}`, () => rmSync(bpfRoot, { recursive: true, force: true }));
  const agent = await startAgent({
    dir, bpfRoot, socketPath: join(dir, 'cellium.sock'), pool: '10.96.0.0/16',
    flags: {
      'datapath-mode': 'bpf', 'bpf-lxc-program': program, 'enable-api-rate-limit': false, 'endpoint-regen-interval': '0', 'bpf-lb-sock': false,
      'bpf-ct-global-tcp-max': 65536, 'bpf-ct-global-any-max': 65536,
    },
  });
  try {
    const cpu0 = cpuMs(agent.pid);
    const threads0 = threadCpuMs(agent.pid);
    const client0 = process.cpuUsage();
    const createMs = await createAll(agent, run, veths);
    const client = process.cpuUsage(client0);
    const cpuPerEndpointMs = veths.length ? (cpuMs(agent.pid) - cpu0) / veths.length : 0;
    const threads = threadCpuPer(threads0, threadCpuMs(agent.pid), veths.length);
    const clientCpuPerEndpointMs = veths.length ? (client.user + client.system) / 1000 / veths.length : 0;
    await new Promise((r) => setTimeout(r, 1000));
    const mem = kernelMemory(bpfRoot);
    const rssMiB = rss(agent.pid).rss;
    const t = threads;
    console.log(`scale (${program}): ${veths.length} endpoints in ${Math.round(createMs)} ms (agent CPU ${cpuPerEndpointMs.toFixed(2)} ms per endpoint: main thread ${t.mainUser.toFixed(2)} user + ${t.mainSys.toFixed(2)} sys, other threads ${t.otherUser.toFixed(2)} user + ${t.otherSys.toFixed(2)} sys; bench client ${clientCpuPerEndpointMs.toFixed(2)}), agent RSS ${rssMiB} MiB, ${mem.programs} programs (${Math.round(mem.programKiB)} KiB), maps ${Math.round(mem.mapKiB)} KiB`);
    const rulesCpu0 = cpuMs(agent.pid);
    const realized = RULES > 0 ? await rules(agent) : 'skipped (CELLIUM_BENCH_SCALE_RULES=0)';
    const rulesCpuMs = cpuMs(agent.pid) - rulesCpu0;
    const after = rss(agent.pid);
    const rulesMapKiB = kernelMemory(bpfRoot).mapKiB;
    console.log(`scale (${program}): rules ${typeof realized === 'number' ? `realized in ${Math.round(realized)} ms` : realized} (agent CPU ${rulesCpuMs} ms), agent RSS ${after.rss} MiB (peak ${after.hwm} MiB), maps ${Math.round(rulesMapKiB)} KiB`);
    return { n: veths.length, createMs, cpuPerEndpointMs, threads, clientCpuPerEndpointMs, rssMiB, ...mem, rules: realized, rulesCpuMs, rulesRssMiB: after.rss, peakRssMiB: after.hwm, rulesMapKiB };
  } finally {
    await agent.stop();
    // the agent leaves its programs attached (that is the point of pinning): the veths' removal detaches them
  }
}

function skipReason(): string | undefined {
  if (process.getuid?.() !== 0) return 'needs root: creates veths and a network namespace, loads and attaches BPF programs';
  const a = bpfAvailable();
  return a.ok ? undefined : `BPF unavailable: ${a.reason}`;
}

async function main(): Promise<void> {
  const skip = skipReason();
  if (skip) {
    console.log(`scale: skipped: ${skip}`);
    return;
  }
  const run = randomBytes(2).toString('hex');
  const steps: Array<{ what: string; fn: () => unknown }> = [];
  const cleanup = (what: string, fn: () => unknown): void => void steps.push({ what, fn });
  try {
    const veths = createVeths(cleanup, 'lxcs', run, `clscale-${run}`, N);
    const shared = await measure('shared', run, veths, cleanup);
    // the client's share: the same requests answered at once by a canned server (no agent)
    const alone = await clientAlone(veths.map((v, i) => endpointRequest(run, v, i, '10.96')), IN_FLIGHT, JSON.stringify(lastAnswer ?? {}));
    printTable(`scale: the bench's client alone (the same ${alone.n} requests, ${IN_FLIGHT} in flight, each answered at once with the agent's last answer by a server process of its own)`,
      ['requests', 'ms', 'requests/s', 'client CPU ms/request'], [[alone.n, alone.ms, Math.round((alone.n / alone.ms) * 1000), alone.clientCpuMs]]);
    // the baseline on fresh veths: nothing of the shared run stays attached to them
    const per = BASELINE > 0 ? await measure('per-endpoint', run, createVeths(cleanup, 'lxcq', run, `clscalq-${run}`, BASELINE), cleanup) : undefined;
    const row = (what: string, s: Scale, target: string): Array<string | number> => [
      what, s.n, s.createMs, Math.round((s.n / s.createMs) * 1000), s.cpuPerEndpointMs,
      `${(s.threads.mainUser + s.threads.mainSys).toFixed(2)} / ${(s.threads.otherUser + s.threads.otherSys).toFixed(2)}`, s.clientCpuPerEndpointMs, s.rssMiB, s.programs, s.programKiB, s.mapKiB, s.rules, s.rulesCpuMs, `${s.rulesRssMiB} (${s.peakRssMiB})`, s.rulesMapKiB, target,
    ];
    printTable(`scale: endpoints created over the agent's API on real veths (${IN_FLIGHT} in flight), then ${RULES} rules selecting every endpoint until all realized them`,
      ['bpf_lxc', 'endpoints', 'create ms', 'creates/s', 'agent CPU ms/endpoint', 'of it main / other threads', 'bench client CPU ms/endpoint', 'agent RSS MiB', 'programs', 'programs KiB', 'maps KiB', `${RULES} rules ms`, 'RSS after rules MiB (peak)', 'maps KiB after rules', 'target / vs per-endpoint'], [
        row('--bpf-lxc-program=shared', shared, `>= 1000/s, <= 250 MiB, programs O(1), rules <= 2000 ms; rate ${per ? ratio(shared.n / shared.createMs, per.n / per.createMs) : '(no baseline: CELLIUM_BENCH_SCALE_BASELINE=0)'} of per-endpoint`),
        ...(per ? [row('per-endpoint programs (baseline)', per, '')] : []),
      ]);
  } finally {
    for (const { what, fn } of steps.reverse()) {
      try {
        await fn();
      } catch (err) {
        console.error(`scale: cleanup: ${what} failed: ${(err as Error).message}`);
      }
    }
  }
}

await main();
