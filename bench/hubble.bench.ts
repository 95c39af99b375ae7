/**
 * Hubble serving throughput: flows per second the hubble cell's path reads from a BPF ring buffer,
 * turns into Hubble flows and serves to one real `hubble observe --follow` client (scripts/hubble.sh)
 * over its unix socket, against the baseline of reading and decoding the same records alone (the
 * monitor's raw ring-buffer reading: MonitorEventReader.read, libbpf's ring_buffer__consume and
 * decodeMonitorEvent), same run; goal >= 0.8x. The records are crafted 64-byte struct monitor_event
 * (bpf/lib/common.h) that the kernel writes into a ring buffer map (bench/c/hubble-ring.bpf.c, a tc
 * program test-run once per record, BPF_PROG_TEST_RUN) a batch at a time as the datapath's events
 * wait for the monitor's 50 ms poll; writing them is the producer's work and is not counted, reading
 * them is. The stages in between say where the time goes: enrichment (the monitor cell's Enricher
 * over a real endpoint manager and identity allocator: an agent in this process, memory datapath,
 * the records' two pods as its endpoints; a read enriched at once as the monitor agent does), the
 * flow and the ring (HubbleObserver.onRecord without followers, a ring of 131,071 and, for the
 * encoded stage, also the agent's default 4,095, the services and workloads looked up
 * in that agent as the hubble cell does), then its protobuf encoding once,
 * then gRPC to a client in another process that only counts messages (what grpc-js and HTTP/2 add,
 * both ends sharing this machine's cores; also with grpc-js's stock one write a message, the
 * patched `_writev` of patches/@grpc+grpc-js taken away for those rounds, interleaved), then to `hubble observe -o json` (the real client, whose
 * JSON printing shares the cores too; its output counted by another process, bench/hubble-lines.mjs,
 * so this process's CPU stays the agent side's). The in-process stages are rated per CPU second (this
 * process's, GC threads included), the served ones per wall second and per second of this process's
 * CPU (the agent side alone: the client runs elsewhere; the producer's time taken out in both).
 * Then each client's ceiling: a server that does no flow work (bench/hubble-ceiling.ts: grpc-js
 * with the batched writes, and a raw node:http2 one) replays the responses the agent encodes for
 * the same records, encoded before the round, as fast as the client takes them; what a client
 * takes a second there bounds any agent's rate to it.
 * Then the agent side's CPU while serving 10k flows/s to the hubble CLI for 5 s, paced as the
 * monitor polls (500 a poll), and the flows lost (never received). Needs root with BPF, clang and
 * the hubble CLI (skips with one line otherwise).
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Hive, silentLogger } from '../src/hive/index.js';
import { agentCells } from '../src/cells.js';
import { EndpointAPIManagerToken, EndpointManagerToken } from '../src/cells/endpoint/index.js';
import { IdentityAllocatorToken } from '../src/cells/identity/index.js';
import { Enricher } from '../src/cells/monitor/index.js';
import { MonitorEventReader, MONITOR_EVENT_SIZE, type MonitorEvent } from '../src/monitor/index.js';
import { HubbleObserver, HubbleServer, flowResponseBytes, frontendServices, podWorkloadLookup } from '../src/cells/hubble/index.js';
import { ServiceManagerToken } from '../src/cells/loadbalancer/index.js';
import { LocalPodsToken } from '../src/cells/k8s/index.js';
import { BpfObject, bpfAvailable } from '../src/bpf/index.js';
import { repoPath } from '../src/api/repo-files.js';
import { machineLoad, printTable, ratio } from './lib/report.js';
import { startCeiling, type CeilingTransport } from './hubble-ceiling.js';

const N = 100_000;
const BATCH = 2000;
const ROUNDS = 5;
const SERVED_ROUNDS = 3;
/** The observer's ring: more than N, so a follower slower than the loop lags without losing flows. */
const RING = 131071;
/** The agent's default ring (--hubble-event-buffer-capacity). */
const DEFAULT_RING = 4095;
/** How many times a ceiling round replays the N responses to the counting client (the fast one: a longer round, a finer count). */
const COUNTER_PASSES = 3;

/** One served run: the rate, how many flows the client received, and how many it never did. */
interface Served {
  readonly rate: number;
  /** Flows per second of this process's CPU (the agent side: reading, flows, gRPC), the producer's left out. */
  readonly cpuRate: number;
  readonly received: number;
  readonly lost: number;
}

function records(): Buffer[] {
  return Array.from({ length: N }, (_, i) => {
    const b = Buffer.alloc(MONITOR_EVENT_SIZE);
    b[0] = i % 2 ? 1 : 3; // drop, policy verdict
    b[1] = 1;
    b[3] = 6;
    b.writeUInt16LE(42, 4);
    b.writeUInt16BE(81, 6);
    b.writeUInt32LE(256, 8);
    b.writeUInt32LE(257, 12);
    b[20] = 4;
    b.writeUInt32BE(0x0af40902, 24);
    b.writeUInt32BE(0x0af40903, 40);
    b.writeUInt16BE(10000 + (i % 50000), 56);
    b[58] = 0x02;
    return b;
  });
}

/**
 * The ring buffer the records go through: bench/c/hubble-ring.bpf.c compiled and loaded with its
 * map pinned as the datapath pins cellium_events, and the monitor's reader of it.
 */
class Ring {
  private constructor(
    private readonly obj: BpfObject,
    private readonly root: string,
    private readonly reader: MonitorEventReader,
  ) {}

  static open(dir: string): Ring {
    const elf = join(dir, 'hubble-ring.o');
    execFileSync('clang', ['-O2', '-g', '-target', 'bpf', '-I', `/usr/include/${execFileSync('uname', ['-m'], { encoding: 'utf8' }).trim()}-linux-gnu`, '-c', repoPath('bench', 'c', 'hubble-ring.bpf.c'), '-o', elf]);
    const root = `/sys/fs/bpf/cellium-hubble-bench-${process.pid}`;
    mkdirSync(root, { recursive: true });
    const obj = BpfObject.open(elf, { pinRoot: root });
    try {
      obj.load();
      return new Ring(obj, root, MonitorEventReader.open(root));
    } catch (err) {
      obj.close();
      rmSync(root, { recursive: true, force: true });
      throw err;
    }
  }

  /** The kernel writes `recs` into the ring (the producer: its CPU time is returned, to be left out). */
  fill(recs: readonly Buffer[]): number {
    const start = process.cpuUsage();
    for (const r of recs) {
      const { retval } = this.obj.testRun('emit', r);
      if (retval !== 0) throw new Error(`the producer failed (${retval === 2 ? 'the ring is full' : 'short packet'})`);
    }
    const used = process.cpuUsage(start);
    return used.user + used.system;
  }

  /** What the monitor agent's poll reads: every record in the ring, decoded. */
  read(): MonitorEvent[] {
    return this.reader.read();
  }

  close(): void {
    this.reader.close();
    this.obj.close();
    rmSync(this.root, { recursive: true, force: true });
  }
}

/**
 * The agent's enricher (the monitor cell's Enricher) over a real endpoint manager and identity
 * allocator: an agent in this process (memory datapath) with the records' two pods as endpoints,
 * so each side is looked up and described as in the agent.
 */
async function startEnricher(dir: string): Promise<{ enricher: Enricher; newObserver: (capacity?: number) => HubbleObserver; stop: () => Promise<void> }> {
  const hive = new Hive(agentCells, { logger: silentLogger() });
  const flags = new Set(hive.config.entries().map((e) => e.flag));
  const own = Object.fromEntries([['bpf-root', join(dir, 'bpf')], ['cni-delete-queue-dir', join(dir, 'delete-queue')]].filter(([f]) => flags.has(f!)));
  hive.configure({ values: { ...own, 'state-dir': join(dir, 'state'), 'socket-path': join(dir, 'cellium.sock'), 'datapath-mode': 'memory', 'ipv4-range': '10.244.9.0/24', 'enable-api-rate-limit': false } });
  await hive.start();
  const api = hive.get(EndpointAPIManagerToken);
  for (const [n, app] of [[2, 'hclient'], [3, 'hserver']] as const) {
    await api.createEndpoint({}, {
      'container-id': `hubble-bench-${app}`, 'container-interface-name': 'eth0', 'interface-name': `lxcbench${n}`, 'interface-index': 100 + n,
      addressing: { ipv4: `10.244.9.${n}` }, 'k8s-pod-name': app, 'k8s-namespace': 'default', labels: [`k8s:app=${app}`], state: 'waiting-for-identity', 'sync-build-endpoint': true,
    });
  }
  return {
    enricher: new Enricher(hive.get(EndpointManagerToken), hive.get(IdentityAllocatorToken)),
    // the agent's observer: services and workloads looked up as the hubble cell does
    newObserver: (capacity = RING) => new HubbleObserver(capacity, 'bench', frontendServices(hive.get(ServiceManagerToken)), podWorkloadLookup(hive.get(LocalPodsToken))),
    stop: () => hive.stop(),
  };
}

let enricher: Enricher;
let newObserver: (capacity?: number) => HubbleObserver;
let ring: Ring;
/** Whether `ring` is open (a stop signal closes it). */
let ringOpen = false;
/** What a stop signal must undo besides the ring: a served run's client and socket directory. */
const onStop = new Set<() => void>();

/** One poll as the monitor agent makes it: the ring read, the read enriched at once (one time string), each event to the observer. */
function poll(observer: HubbleObserver): number {
  const events = enricher.enrichAll(ring.read(), new Date().toISOString());
  for (const event of events) observer.onRecord({ kind: 'event', event });
  return events.length;
}

/**
 * All N records through the ring, a batch at a time: the kernel writes a batch, `consume` reads
 * it; N over the CPU time the reads took (this process's, GC threads included: steadier than wall
 * time on a shared machine).
 */
function rate(recs: readonly Buffer[], consume: () => number): number {
  let cpu = 0;
  let n = 0;
  for (let i = 0; i < recs.length; i += BATCH) {
    ring.fill(recs.slice(i, i + BATCH));
    const start = process.cpuUsage();
    n += consume();
    const used = process.cpuUsage(start);
    cpu += used.user + used.system;
  }
  if (n !== N) throw new Error(`read ${n} of ${N} records`);
  return N / (cpu / 1e6);
}

/** The baseline: the monitor's raw ring-buffer reading (consume + decode), nothing else. */
function baseline(recs: readonly Buffer[]): number {
  return rate(recs, () => ring.read().length);
}

/** read + decode + enrich (a read at once, both sides looked up as the monitor agent does). */
function enriched(recs: readonly Buffer[]): number {
  let pods = 0;
  const r = rate(recs, () => {
    const events = enricher.enrichAll(ring.read(), new Date().toISOString());
    for (const x of events) if (x.source.pod_name) pods++;
    return events.length;
  });
  if (pods !== N) throw new Error(`enriched ${pods} of ${N} with the client pod: the endpoints are not the records' addresses`);
  return r;
}

/** read + decode + enrich + flow + ring, optionally encoding each response once (what serving adds per flow). */
function observed(recs: readonly Buffer[], encode: boolean, capacity = RING): number {
  const observer = newObserver(capacity);
  let bytes = 0;
  const sub = encode ? observer.items$.subscribe((item) => {
    if (item.kind === 'flow') bytes += flowResponseBytes(item.entry, 'bench').length;
  }) : undefined;
  const r = rate(recs, () => poll(observer));
  sub?.unsubscribe();
  if (encode && bytes === 0) throw new Error('nothing encoded');
  return r;
}

/** A client process following the socket: counts flows (and lost events) it received. */
interface Follower {
  /** The client's process (0 until known), whose CPU time /proc tells. */
  pid(): number;
  flows(): number;
  lost(): number;
  close(): void;
}

/**
 * `hubble observe --follow -o json` on the socket, its output read and counted by another process
 * (bench/hubble-lines.mjs), not by this one: this process is the agent side, whose CPU is measured.
 */
function hubbleFollower(bin: string, socket: string): Follower {
  const p = spawn(process.execPath, [repoPath('bench', 'hubble-lines.mjs'), bin, 'observe', '--server', `unix://${socket}`, '--follow', '-o', 'json'], { stdio: ['ignore', 'pipe', 'inherit'], cwd: repoPath() });
  let pid = 0;
  let flows = 0;
  let lost = 0;
  let tail = '';
  p.stdout.on('data', (b: Buffer) => {
    const parts = (tail + b.toString()).split('\n');
    tail = parts.pop()!;
    for (const l of parts) {
      const m = /^(\d+) (\d+)$/.exec(l);
      if (m) [flows, lost] = [Number(m[1]), Number(m[2])];
      else if (l.startsWith('pid ')) pid = Number(l.slice(4));
    }
  });
  return { pid: () => pid, flows: () => flows, lost: () => lost, close: () => void p.kill() };
}

/** A Node process (bench/hubble-counter.mjs) that reads GetFlows messages without decoding them and prints a count every `everyMs`. */
function counterFollower(socket: string, everyMs = 100): Follower {
  const p = spawn(process.execPath, [repoPath('bench', 'hubble-counter.mjs'), socket, String(everyMs)], { stdio: ['ignore', 'pipe', 'inherit'], cwd: repoPath() });
  let flows = 0;
  let tail = '';
  p.stdout.on('data', (b: Buffer) => {
    const parts = (tail + b.toString()).split('\n');
    tail = parts.pop()!;
    for (const l of parts) if (/^\d+$/.test(l)) flows = Number(l);
  });
  return { pid: () => p.pid!, flows: () => flows, lost: () => 0, close: () => void p.kill() };
}

async function withServer<T>(recs: readonly Buffer[], follower: (socket: string) => Follower, fn: (observer: HubbleObserver, f: Follower) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'cellium-hubble-bench-'));
  const observer = newObserver();
  const srv = new HubbleServer(observer, join(dir, 'hubble.sock'), 'bench', silentLogger());
  await srv.start();
  const f = follower(join(dir, 'hubble.sock'));
  const undo = (): void => {
    f.close();
    rmSync(dir, { recursive: true, force: true });
  };
  onStop.add(undo);
  try {
    // until the client follows: a probe a poll
    for (let i = 0; f.flows() === 0; i++) {
      if (i > 200) throw new Error('the follower did not connect within 10 s');
      ring.fill(recs.slice(0, 1));
      poll(observer);
      await new Promise((r) => setTimeout(r, 50));
    }
    await new Promise((r) => setTimeout(r, 200));
    return await fn(observer, f);
  } finally {
    onStop.delete(undo);
    f.close();
    observer.stop();
    await srv.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** grpc-js's server stream prototype, whose `_writev` (patches/@grpc+grpc-js) batches a call's queued messages. */
const grpcServerStream = (createRequire(import.meta.url)('@grpc/grpc-js/build/src/server-call.js') as { ServerWritableStreamImpl: { prototype: { _writev?: unknown } } }).ServerWritableStreamImpl.prototype;

/** `fn` with grpc-js's stock behaviour: one HTTP/2 write a message (the patch's `_writev` taken away meanwhile). */
async function oneWriteAMessage<T>(fn: () => Promise<T>): Promise<T> {
  const writev = grpcServerStream._writev;
  if (!writev) throw new Error('grpc-js is not patched (npx patch-package): the batched rows would measure nothing');
  delete grpcServerStream._writev;
  try {
    return await fn();
  } finally {
    grpcServerStream._writev = writev;
  }
}

/** All N records as fast as the loop goes, until the client received them all (or was told they were lost); the producer's time left out. */
async function served(follower: (socket: string) => Follower, recs: readonly Buffer[]): Promise<Served> {
  return withServer(recs, follower, async (observer, f) => {
    const before = f.flows();
    let producing = 0n;
    let producingCpu = 0;
    const cpu0 = process.cpuUsage();
    const start = process.hrtime.bigint();
    for (let i = 0; i < recs.length; i += BATCH) {
      const p0 = process.hrtime.bigint();
      producingCpu += ring.fill(recs.slice(i, i + BATCH));
      producing += process.hrtime.bigint() - p0;
      poll(observer);
      await new Promise((r) => setImmediate(r));
    }
    for (let i = 0; f.flows() - before + f.lost() < N && i < 6000; i++) await new Promise((r) => setTimeout(r, 5));
    const s = Number(process.hrtime.bigint() - start - producing) / 1e9;
    const used = process.cpuUsage(cpu0);
    const received = f.flows() - before;
    return { rate: received / s, cpuRate: received / ((used.user + used.system - producingCpu) / 1e6), received, lost: N - received };
  });
}

/** One ceiling run: what the client took a wall second, and each side's CPU a flow (µs). */
interface Ceiling {
  readonly rate: number;
  /** This process: the ceiling server (and, for the hubble CLI, counting its output's lines). */
  readonly serverUs: number;
  /** The client's process, all its threads (/proc/PID/stat). */
  readonly clientUs: number;
  readonly received: number;
}

const TICK_US = 1e6 / Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());

/** A process's CPU time so far in µs: user + system of all its threads (/proc/PID/stat fields 14 and 15). */
function processCpu(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) * TICK_US;
}

/**
 * The GetFlowsResponse bytes the agent sends for the records: the N records read, enriched and
 * made flows by the agent's observer as in a served round, each flow's response encoded once
 * (flowResponseBytes, what GetFlows writes), copied out of the encoder's slab.
 */
function preEncoded(recs: readonly Buffer[]): Buffer[] {
  const observer = newObserver();
  try {
    for (let i = 0; i < recs.length; i += BATCH) {
      ring.fill(recs.slice(i, i + BATCH));
      poll(observer);
    }
    const out = observer.ring.snapshot().map((e) => Buffer.from(flowResponseBytes(e, 'bench')));
    if (out.length !== N) throw new Error(`encoded ${out.length} of ${N} flows`);
    return out;
  } finally {
    observer.stop();
  }
}

/**
 * A client's ceiling: a server doing no flow work (bench/hubble-ceiling.ts) replays the
 * pre-encoded responses `passes` times to the follower as fast as it takes them; its intake a
 * wall second from the first replayed write to the last response counted.
 */
async function ceiling(transport: CeilingTransport, follower: (socket: string) => Follower, responses: readonly Buffer[], passes: number): Promise<Ceiling> {
  const dir = mkdtempSync(join(tmpdir(), 'cellium-hubble-bench-'));
  const socket = join(dir, 'hubble.sock');
  const srv = await startCeiling(transport, socket, responses);
  const f = follower(socket);
  const undo = (): void => {
    f.close();
    rmSync(dir, { recursive: true, force: true });
  };
  onStop.add(undo);
  try {
    await srv.connected;
    for (let i = 0; f.flows() === 0; i++) {
      if (i > 200) throw new Error('the follower did not count its first flow within 10 s');
      await new Promise((r) => setTimeout(r, 50));
    }
    await new Promise((r) => setTimeout(r, 200));
    const before = f.flows();
    const want = passes * responses.length;
    const client0 = processCpu(f.pid());
    const cpu0 = process.cpuUsage();
    const start = process.hrtime.bigint();
    srv.replay(passes);
    for (let i = 0; f.flows() - before < want && i < 24000; i++) await new Promise((r) => setTimeout(r, 5));
    const s = Number(process.hrtime.bigint() - start) / 1e9;
    const used = process.cpuUsage(cpu0);
    const client = processCpu(f.pid()) - client0;
    const received = f.flows() - before;
    if (received < want) throw new Error(`the ${transport} ceiling: the client counted ${received} of ${want} flows in ${s.toFixed(1)} s`);
    return { rate: received / s, serverUs: (used.user + used.system) / received, clientUs: client / received, received };
  } finally {
    onStop.delete(undo);
    f.close();
    await srv.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** 10k flows/s for 5 s in 50 ms polls: this process's CPU (% of one core, the producer's left out) and the flows lost. */
async function paced(follower: (socket: string) => Follower, recs: readonly Buffer[]): Promise<{ cpu: number; sent: number; received: number; lost: number }> {
  return withServer(recs, follower, async (observer, f) => {
    const perPoll = 500;
    const polls = 100;
    const before = f.flows();
    let producing = 0;
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    for (let p = 0; p < polls; p++) {
      producing += ring.fill(recs.slice((p * perPoll) % N, ((p * perPoll) % N) + perPoll));
      poll(observer);
      const next = t0 + (p + 1) * 50;
      await new Promise((r) => setTimeout(r, Math.max(0, next - performance.now())));
    }
    for (let i = 0; f.flows() - before < perPoll * polls && i < 1000; i++) await new Promise((r) => setTimeout(r, 10));
    const wall = performance.now() - t0;
    const used = process.cpuUsage(cpu0);
    const received = f.flows() - before;
    return { cpu: (100 * (used.user + used.system - producing)) / 1000 / wall, sent: perPoll * polls, received, lost: perPoll * polls - received };
  });
}

async function main(): Promise<void> {
  const r = spawnSync('bash', [repoPath('scripts', 'hubble.sh'), 'path'], { encoding: 'utf8' });
  if (r.status !== 0) {
    console.log('hubble bench: skipped: the hubble CLI is not built (bash scripts/hubble.sh build)');
    return;
  }
  const bpf = bpfAvailable();
  if (!bpf.ok) {
    console.log(`hubble bench: skipped: no BPF here (${bpf.reason})`);
    return;
  }
  if (spawnSync('clang', ['--version']).status !== 0) {
    console.log('hubble bench: skipped: clang is missing (apt-get install clang)');
    return;
  }
  const bin = r.stdout.trim();
  const dir = mkdtempSync(join(tmpdir(), 'cellium-hubble-bench-agent-'));
  // stopped (Ctrl-C, scripts/bench.sh's timeout): the pinned ring and the temp dir go too
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      for (const undo of onStop) undo();
      if (ringOpen) ring.close();
      rmSync(dir, { recursive: true, force: true });
      process.exit(130);
    });
  }
  const agent = await startEnricher(dir).catch((err: unknown) => {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  });
  enricher = agent.enricher;
  newObserver = agent.newObserver;
  try {
    ring = Ring.open(dir);
    ringOpen = true;
    try {
      await stages(bin);
    } finally {
      ringOpen = false;
      ring.close();
    }
  } finally {
    await agent.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function stages(bin: string): Promise<void> {
  const recs = records();
  baseline(recs);
  enriched(recs);
  observed(recs, true); // warm-up
  // the machine is shared: each stage's best of ROUNDS, the rounds interleaved so load hits all alike
  let base = 0;
  let enrich = 0;
  let flows = 0;
  let encoded = 0;
  let encodedDefault = 0;
  for (let i = 0; i < ROUNDS; i++) {
    base = Math.max(base, baseline(recs));
    enrich = Math.max(enrich, enriched(recs));
    flows = Math.max(flows, observed(recs, false));
    encoded = Math.max(encoded, observed(recs, true));
    encodedDefault = Math.max(encodedDefault, observed(recs, true, DEFAULT_RING));
  }
  const best = (a: Served, b: Served): Served => ({ ...(b.rate > a.rate ? b : a), cpuRate: Math.max(a.cpuRate, b.cpuRate) });
  let counted = await served(counterFollower, recs);
  let unbatched = await oneWriteAMessage(() => served(counterFollower, recs));
  let cli = await served((socket) => hubbleFollower(bin, socket), recs);
  for (let i = 1; i < SERVED_ROUNDS; i++) {
    counted = best(counted, await served(counterFollower, recs));
    unbatched = best(unbatched, await oneWriteAMessage(() => served(counterFollower, recs)));
    cli = best(cli, await served((socket) => hubbleFollower(bin, socket), recs));
  }
  // the ceilings: each client alone, fed by servers that do no flow work; interleaved, best of SERVED_ROUNDS
  const responses = preEncoded(recs);
  const counter10 = (socket: string): Follower => counterFollower(socket, 10);
  const hubble = (socket: string): Follower => hubbleFollower(bin, socket);
  const ceilings = [
    { name: 'ceiling: pre-encoded responses to the counting client, grpc-js server (batched writes)', transport: 'grpc-js', follower: counter10, passes: COUNTER_PASSES },
    { name: 'ceiling: pre-encoded responses to the counting client, raw node:http2 server', transport: 'http2', follower: counter10, passes: COUNTER_PASSES },
    { name: 'ceiling: pre-encoded responses to `hubble observe --follow -o json`, grpc-js server (batched writes)', transport: 'grpc-js', follower: hubble, passes: 1 },
    { name: 'ceiling: pre-encoded responses to `hubble observe --follow -o json`, raw node:http2 server', transport: 'http2', follower: hubble, passes: 1 },
  ] as const;
  const ceilingBest: (Ceiling | undefined)[] = ceilings.map(() => undefined);
  for (let i = 0; i < SERVED_ROUNDS; i++) {
    for (const [k, c] of ceilings.entries()) {
      const r = await ceiling(c.transport, c.follower, responses, c.passes);
      const b = ceilingBest[k];
      ceilingBest[k] = b ? { ...(r.rate > b.rate ? r : b), serverUs: Math.min(b.serverUs, r.serverUs), clientUs: Math.min(b.clientUs, r.clientUs) } : r;
    }
  }
  const pace = await paced((socket) => hubbleFollower(bin, socket), recs);
  const target = '>= 0.8x';
  const us = (r: number): string => `${(1e6 / r).toFixed(2)} µs`;
  printTable(`Hubble: ${N} flows read from a BPF ring buffer to one hubble observe --follow vs reading and decoding them alone (in-process stages: per CPU second, best of ${ROUNDS}; served: per wall second and per second of the agent side's CPU, best of ${SERVED_ROUNDS}; ${machineLoad()})`, ['path', 'flows/s', 'per flow', 'vs baseline', 'received', 'lost'], [
    ['ring read + decode (raw ring-buffer reading, baseline)', base, us(base), '1x', N, 0],
    ['... + enrich (the agent\'s Enricher)', enrich, us(enrich), ratio(enrich, base), '-', '-'],
    ['... + flow + ring (no follower)', flows, us(flows), ratio(flows, base), '-', '-'],
    ['... + protobuf response', encoded, us(encoded), ratio(encoded, base, target), '-', '-'],
    [`... + protobuf response, the agent's default ring (${DEFAULT_RING})`, encodedDefault, us(encodedDefault), ratio(encodedDefault, base, target), '-', '-'],
    ['... + gRPC to a process counting messages (wall)', counted.rate, us(counted.rate), ratio(counted.rate, base, target), counted.received, counted.lost],
    ['... + gRPC to a process counting messages (agent CPU)', counted.cpuRate, us(counted.cpuRate), ratio(counted.cpuRate, base, target), counted.received, counted.lost],
    ['... + gRPC to a process counting messages, one write a message (stock grpc-js, wall)', unbatched.rate, us(unbatched.rate), ratio(unbatched.rate, base, target), unbatched.received, unbatched.lost],
    ['... + gRPC to a process counting messages, one write a message (stock grpc-js, agent CPU)', unbatched.cpuRate, us(unbatched.cpuRate), ratio(unbatched.cpuRate, base, target), unbatched.received, unbatched.lost],
    ['... + gRPC to hubble observe --follow -o json (wall)', cli.rate, us(cli.rate), ratio(cli.rate, base, target), cli.received, cli.lost],
    ['... + gRPC to hubble observe --follow -o json (agent CPU)', cli.cpuRate, us(cli.cpuRate), ratio(cli.cpuRate, base, target), cli.received, cli.lost],
  ]);
  printTable(`Hubble: each client alone, fed pre-encoded GetFlowsResponse messages (the agent's bytes for the same ${N} records, encoded before the round) by a server that does no flow work, over the same unix socket; flows/s a wall second (best of ${SERVED_ROUNDS}, interleaved; CPU a flow: the least of the rounds); the baseline ${Math.round(base).toLocaleString('en-US')} flows/s from the table above (${machineLoad()})`, ['path', 'flows/s', 'per flow', 'vs baseline', 'server-side CPU a flow', 'client CPU a flow', 'received'], [
    ...ceilings.map((c, k) => {
      const r = ceilingBest[k]!;
      return [c.name, r.rate, us(r.rate), ratio(r.rate, base, target), `${r.serverUs.toFixed(2)} µs`, `${r.clientUs.toFixed(2)} µs`, r.received];
    }),
  ]);
  printTable('Hubble: the agent side at 10k flows/s to hubble observe --follow -o json for 5 s', ['flows sent', 'received', 'lost', 'agent-side CPU (% of one core)'], [
    [pace.sent, pace.received, pace.lost, `${pace.cpu.toFixed(1)}%`],
  ]);
}

await main();
