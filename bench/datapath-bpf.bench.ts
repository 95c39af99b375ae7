/**
 * BPF datapath benchmarks (issue 6), on real host interfaces: one veth pair per endpoint, the host
 * side `lxcb…` in this network namespace (where bpf_lxc is attached) and the peer in a network
 * namespace of the run. Each is measured with `--datapath-mode=bpf` against the same work with
 * `--datapath-mode=memory` in the same run:
 *  1. regeneration per endpoint, `rewrite+load` and `no-rebuild` (p50/p99 over the endpoints),
 *     through EndpointView.regenerate with the agent's cells in-process, with per-endpoint
 *     programs and with --bpf-lxc-program=shared;
 *  2. 250 rules selecting all of 100 endpoints imported through the PolicyRepository until every
 *     endpoint realized them and every policy map holds its entries (target <= 0.5 s);
 *  3. the agent process's RSS with 100 endpoints created over its API socket (target <= 150 MiB).
 * Every veth, namespace, BPF root, state directory and process is removed at the end, also on a
 * failure or Ctrl-C. Needs root and BPF (skips with one line otherwise); never asserts.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { CelliumClient } from '../src/api/client.js';
import { bpfAvailable } from '../src/bpf/index.js';
import { agentCells } from '../src/cells.js';
import { BpfDatapath, describeTables } from '../src/cells/datapath-bpf/index.js';
import { DatapathToken, policyMapName, type Datapath } from '../src/cells/datapath/index.js';
import { expandPolicy } from '../src/maps/policy/key.js';
import {
  type Endpoint, EndpointAPIManagerToken, EndpointManagerToken, type EndpointView, type RegenerationLevel,
} from '../src/cells/endpoint/index.js';
import { IdentityAllocatorToken } from '../src/cells/identity/index.js';
import { PolicyRepositoryToken } from '../src/cells/policy/index.js';
import { Hive, silentLogger } from '../src/hive/index.js';
import { printTable, ratio, stats, type Stats } from './lib/report.js';
import { benchRules, createVeths, endpointRequest, type Veth } from './lib/veths.js';

/** Endpoints (veth pairs) of the run. */
const N = 100;
/** Policy rules selecting every endpoint. */
const RULES = 250;
/** Regenerations of each endpoint per level. */
const ROUNDS = 2;
/** Times the rules are imported (after deleting them again). */
const POLICY_RUNS = 3;
/** The agent's IPv4 pool; endpoints get 10.250.0.10 onwards (only ever written to this run's own maps). */
const POOL = '10.250.0.0/16';
type Mode = 'bpf' | 'memory';
/** How the BPF datapath loads bpf_lxc (--bpf-lxc-program). */
type Program = 'per-endpoint' | 'shared';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Cleanup steps run last-in first-out; a failing step is reported and the others still run. */
class Cleanup {
  private readonly steps: Array<{ what: string; fn: () => unknown }> = [];
  /** Adds a step. */
  add(what: string, fn: () => unknown): void {
    this.steps.push({ what, fn });
  }
  /** Runs every step added so far (once). */
  async run(): Promise<void> {
    for (const { what, fn } of this.steps.splice(0).reverse()) {
      try {
        await fn();
      } catch (err) {
        console.error(`datapath-bpf: cleanup: ${what} failed: ${(err as Error).message}`);
      }
    }
  }
}

/** Per-call durations of regenerating every endpoint `ROUNDS` times at `level`, one at a time. */
async function regenerations(eps: readonly EndpointView[], level: RegenerationLevel): Promise<Stats> {
  const out: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    for (const ep of eps) {
      const t0 = performance.now();
      await ep.regenerate(`benchmark (${level})`, level);
      out.push(performance.now() - t0);
    }
  }
  return stats(out);
}

/** Resolves once every endpoint realized policy revision `revision` (polled every millisecond). */
async function realized(eps: readonly EndpointView[], revision: number, timeoutMs = 60_000): Promise<void> {
  const end = performance.now() + timeoutMs;
  const behind = (): number => eps.filter((ep) => ((ep as Endpoint).realizedPolicy?.revision ?? 0) < revision).length;
  for (let n = behind(); n > 0; n = behind()) {
    if (performance.now() > end) throw new Error(`${n} of ${eps.length} endpoints did not realize policy revision ${revision} within ${timeoutMs} ms`);
    await sleep(1);
  }
}

/** Checks every endpoint's policy map (the kernel's for bpf) against its expanded policy; a summary line. */
async function verifyPolicyMaps(hive: Hive, dp: Datapath, eps: readonly EndpointView[]): Promise<string> {
  const repo = hive.get(PolicyRepositoryToken);
  const ids = hive.get(IdentityAllocatorToken);
  let ok = 0;
  let entries = 0;
  const bad: string[] = [];
  for (const ep of eps) {
    const identity = ep.identity === undefined ? undefined : ids.lookup(ep.identity);
    const want = identity ? expandPolicy(repo.resolve(identity).entries).length : -1;
    const dump = await dp.maps.get(policyMapName(ep.id));
    const have = dump?.entries.length ?? 0;
    entries += have;
    if (dump?.status.state === 'done' && have === want && want > 0) ok++;
    else bad.push(`${policyMapName(ep.id)}: ${dump?.status.state ?? 'missing'}, ${have}/${want} entries`);
  }
  return `${ok}/${eps.length} maps hold their entries (${entries} in all)${bad.length ? `; ${bad.slice(0, 3).join('; ')}` : ''}`;
}

/** What one in-process run measured. */
interface InProcess {
  readonly create: Stats;
  readonly rewrite: Stats;
  readonly noRebuild: Stats;
  readonly noRebuildWithPolicy: Stats;
  /** Import until realized everywhere, one sample per run. */
  readonly policy: Stats;
  readonly verified: string;
  /** The BPF tables' status after the policy was applied (bpf only). */
  readonly tables?: string;
}

/** The agent's cells in-process with `mode` on `veths`: creations, regenerations, the 250 rules; endpoints deleted at the end. */
async function inProcess(mode: Mode, run: string, veths: readonly Veth[], dir: string, bpfRoot: string, program: Program = 'per-endpoint'): Promise<InProcess> {
  const c = new Cleanup();
  try {
    const hive = new Hive(agentCells, { logger: silentLogger() });
    hive.configure({
      values: {
        'state-dir': join(dir, 'state'), 'socket-path': join(dir, 'cellium.sock'), 'cni-delete-queue-dir': join(dir, 'delete-queue'),
        'bpf-root': bpfRoot, 'datapath-mode': mode, 'ipv4-range': POOL, 'endpoint-regen-interval': '0', 'endpoint-gc-interval': '0', 'bpf-lb-sock': false,
        'bpf-lxc-program': program,
      },
    });
    await hive.start();
    c.add(`stopping the ${mode} hive`, () => hive.stop());
    const api = hive.get(EndpointAPIManagerToken);
    c.add(`deleting the ${mode} endpoints`, () => Promise.all(hive.get(EndpointManagerToken).getEndpoints().map((ep) => api.deleteEndpoint({}, String(ep.id)))));
    const eps: EndpointView[] = [];
    const created: number[] = [];
    for (const [i, v] of veths.entries()) {
      const t0 = performance.now();
      eps.push(await api.createEndpoint({}, endpointRequest(run, v, i, '10.250')));
      created.push(performance.now() - t0);
    }
    const rewrite = await regenerations(eps, 'rewrite+load');
    const noRebuild = await regenerations(eps, 'no-rebuild');
    const repo = hive.get(PolicyRepositoryToken);
    const applied: number[] = [];
    for (let r = 0; r < POLICY_RUNS; r++) {
      if (r > 0) await realized(eps, repo.delete('all').revision); // untimed: back to no rules
      const t0 = performance.now();
      const change = repo.import(benchRules(RULES));
      await realized(eps, change.revision);
      applied.push(performance.now() - t0);
    }
    const dp = hive.get(DatapathToken);
    const verified = await verifyPolicyMaps(hive, dp, eps);
    const tables = dp instanceof BpfDatapath ? describeTables(dp.maps.report()).message : undefined;
    const noRebuildWithPolicy = await regenerations(eps, 'no-rebuild');
    return { create: stats(created), rewrite, noRebuild, noRebuildWithPolicy, policy: stats(applied), verified, ...(tables ? { tables } : {}) };
  } finally {
    await c.run();
  }
}

/** The repository root (where bin/cellium-agent.js is), from this file in bench/ or dist/bench/. */
function repoRoot(): string {
  for (let d = import.meta.dirname; d !== dirname(d); d = dirname(d)) {
    if (existsSync(join(d, 'bin', 'cellium-agent.js')) && existsSync(join(d, 'package.json'))) return d;
  }
  throw new Error(`no bin/cellium-agent.js above ${import.meta.dirname}`);
}

/** Why the built agent cannot run the RSS benchmark, or undefined when it can. */
function agentUnbuilt(bin: string): string | undefined {
  const help = spawnSync(process.execPath, [bin, '--help'], { encoding: 'utf8' });
  if (help.status !== 0) return `cellium-agent --help failed: ${(help.stderr || help.stdout).trim().split('\n')[0]}`;
  return /--bpf-root=/.test(help.stdout) ? undefined : 'the built agent has no BPF datapath cell (dist/ is stale: npm run build)';
}

/** VmRSS and VmHWM of a process, in MiB. */
function memoryOf(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rss: kib('VmRSS') / 1024, hwm: kib('VmHWM') / 1024 };
}

/** What one agent process measured. */
interface AgentRss {
  readonly idle: { rss: number; hwm: number };
  readonly loaded: { rss: number; hwm: number };
  readonly createMs: number;
}

/** Waits until the agent answers GET /healthz with state Ok; throws with its output when it exits or never does. */
async function agentReady(client: CelliumClient, child: ChildProcess, output: () => string, timeoutMs = 60_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  let last: string;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`the agent exited (${child.exitCode ?? child.signalCode}): ${output()}`);
    try {
      const s = await client.status();
      if (s.cilium?.state === 'Ok') return;
      last = `state ${s.cilium?.state ?? 'unknown'}: ${s.cilium?.msg ?? ''}`;
    } catch (err) {
      last = (err as Error).message;
    }
    if (Date.now() > end) throw new Error(`the agent was not ready within ${timeoutMs} ms (${last}): ${output()}`);
    await sleep(100);
  }
}

/** Runs bin/cellium-agent.js with `mode` on temporary directories, creates an endpoint per veth over its socket, reads its memory. */
async function agentProcess(bin: string, mode: Mode, run: string, veths: readonly Veth[], dir: string, bpfRoot: string): Promise<AgentRss> {
  const c = new Cleanup();
  try {
    const socketPath = join(dir, 'cellium.sock');
    const flags = [
      `--socket-path=${socketPath}`, `--state-dir=${join(dir, 'state')}`, `--cni-delete-queue-dir=${join(dir, 'delete-queue')}`, `--bpf-root=${bpfRoot}`,
      `--datapath-mode=${mode}`, `--ipv4-range=${POOL}`, '--enable-api-rate-limit=false', '--endpoint-regen-interval=0', '--endpoint-gc-interval=0', '--bpf-lb-sock=false',
    ];
    const child = spawn(process.execPath, [bin, ...flags], { stdio: ['ignore', 'pipe', 'pipe'] });
    let tail = '';
    const keep = (b: Buffer): void => void (tail = (tail + b.toString()).slice(-2000));
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    c.add(`stopping the ${mode} agent (pid ${child.pid})`, async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      if (await Promise.race([exited.then(() => true), sleep(20_000).then(() => false)])) return;
      child.kill('SIGKILL');
      await exited;
    });
    const client = new CelliumClient({ socketPath });
    c.add('closing the client', () => client.close());
    await agentReady(client, child, () => tail);
    const idle = memoryOf(child.pid!);
    const ids: number[] = [];
    c.add(`deleting the ${mode} agent's endpoints`, async () => {
      for (const id of ids) await client.deleteEndpoint(id);
    });
    const t0 = performance.now();
    for (const [i, v] of veths.entries()) {
      const ep = await client.createEndpoint(0, endpointRequest(run, v, i, '10.250'));
      ids.push(ep.id!);
    }
    const createMs = performance.now() - t0;
    await sleep(1000); // lets the agent settle (status timers, GC) before reading
    return { idle, loaded: memoryOf(child.pid!), createMs };
  } finally {
    await c.run();
  }
}

/** Why this benchmark cannot run here, or undefined. */
function skipReason(): string | undefined {
  if (process.getuid?.() !== 0) return 'needs root: creates veths and a network namespace, loads and attaches BPF programs';
  const a = bpfAvailable();
  return a.ok ? undefined : `BPF unavailable: ${a.reason}`;
}

async function main(): Promise<void> {
  const skip = skipReason();
  if (skip) {
    console.log(`datapath-bpf: skipped: ${skip}`);
    return;
  }
  const run = randomBytes(2).toString('hex');
  const c = new Cleanup();
  const onSignal = (sig: NodeJS.Signals): void => void c.run().finally(() => process.exit(sig === 'SIGINT' ? 130 : 143));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const dir = mkdtempSync(join(tmpdir(), 'cellium-bench-dpbpf-'));
    c.add(`removing ${dir}`, () => rmSync(dir, { recursive: true, force: true }));
    const bpfRoot = (name: string): string => {
      const root = `/sys/fs/bpf/cellium-bench-${run}-${name}`;
      c.add(`removing ${root}`, () => rmSync(root, { recursive: true, force: true }));
      return root;
    };
    const veths = createVeths((what, fn) => c.add(what, fn), 'lxcb', run, `cldpb-${run}`, N);

    const mem = await inProcess('memory', run, veths, join(dir, 'mem'), join(dir, 'mem', 'bpf'));
    const bpf = await inProcess('bpf', run, veths, join(dir, 'bpf'), bpfRoot('inproc'));
    const shared = await inProcess('bpf', run, veths, join(dir, 'shared'), bpfRoot('shared'), 'shared');
    const row = (what: string, o: Stats, b: Stats): Array<string | number> => [what, o.p50Ms, o.p99Ms, o.meanMs, b.p50Ms, b.p99Ms, ratio(o.p50Ms, b.p50Ms)];
    for (const [name, r] of [['per-endpoint programs', bpf], ['--bpf-lxc-program=shared', shared]] as const) {
      printTable(`datapath-bpf (${name}): per endpoint, ${N} endpoints on real veths, agent cells in-process (${ROUNDS} regenerations of each per level; ms)`,
        ['what', 'bpf p50', 'bpf p99', 'bpf mean', 'memory p50', 'memory p99', 'bpf vs memory (p50)'], [
          row('createEndpoint, sync-build (first rewrite+load)', r.create, mem.create),
          row('regenerate rewrite+load (program reloaded)', r.rewrite, mem.rewrite),
          row('regenerate no-rebuild (maps only)', r.noRebuild, mem.noRebuild),
          row(`regenerate no-rebuild with the ${RULES} rules in place`, r.noRebuildWithPolicy, mem.noRebuildWithPolicy),
        ]);
    }
    printTable(`datapath-bpf: ${RULES} rules selecting all ${N} endpoints, import until every endpoint realized them and every policy map is written (${POLICY_RUNS} runs, ms)`,
      ['datapath', 'median', 'min', 'max', 'target', 'policy maps afterwards'], [
        ['bpf (kernel maps read back)', bpf.policy.p50Ms, bpf.policy.minMs, bpf.policy.maxMs, `<= 500 ms (${ratio(bpf.policy.p50Ms, mem.policy.p50Ms)} of memory)`, bpf.verified],
        ['bpf, --bpf-lxc-program=shared', shared.policy.p50Ms, shared.policy.minMs, shared.policy.maxMs, `<= 500 ms (${ratio(shared.policy.p50Ms, mem.policy.p50Ms)} of memory)`, shared.verified],
        ['baseline: memory', mem.policy.p50Ms, mem.policy.minMs, mem.policy.maxMs, '', mem.verified],
      ]);
    if (bpf.tables) console.log(`\nBPF tables after the import: ${bpf.tables}`);

    const bin = join(repoRoot(), 'bin', 'cellium-agent.js');
    const unbuilt = agentUnbuilt(bin);
    if (unbuilt) {
      console.log(`\ndatapath-bpf: agent RSS skipped: ${unbuilt}`);
      return;
    }
    const memAgent = await agentProcess(bin, 'memory', run, veths, join(dir, 'agent-mem'), join(dir, 'agent-mem', 'bpf'));
    const bpfAgent = await agentProcess(bin, 'bpf', run, veths, join(dir, 'agent-bpf'), bpfRoot('agent'));
    printTable(`datapath-bpf: cellium-agent process memory (MiB; ${N} endpoints created over the API socket on real veths, read 1 s after the last)`,
      ['agent', 'VmRSS, 0 endpoints', `VmRSS, ${N} endpoints`, 'VmHWM', `${N} creations, ms`, 'target'], [
        ['--datapath-mode=bpf', bpfAgent.idle.rss, bpfAgent.loaded.rss, bpfAgent.loaded.hwm, bpfAgent.createMs, `<= 150 MiB (${ratio(bpfAgent.loaded.rss, memAgent.loaded.rss)} of memory)`],
        ['baseline: --datapath-mode=memory', memAgent.idle.rss, memAgent.loaded.rss, memAgent.loaded.hwm, memAgent.createMs, ''],
      ]);
  } finally {
    await c.run();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

await main();
