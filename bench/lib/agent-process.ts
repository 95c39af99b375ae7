/** The `cellium-agent` process as the CNI benches run it: its own process, paths and pool of the run's own. */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CelliumClient } from '../../src/api/client.js';
import { onTmpfs } from '../../src/lib/tmpfs.js';

/** The repository root (bench/ or dist/bench/ below it). */
export function root(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'cni-shim')) && dirname(dir) !== dir) dir = dirname(dir);
  return dir;
}

/**
 * Where the run keeps its files (the agent's state directory and socket, host-local's data
 * directory, the CNI files): on tmpfs when /dev/shm is one, as a node keeps /var/run, so both
 * sides are measured without this machine's disk (its ext4 allocator costs each new inode dearly
 * after many deletions); else the temporary directory.
 */
export function scratchBase(): string {
  return existsSync('/dev/shm') && onTmpfs('/dev/shm') ? '/dev/shm' : tmpdir();
}

/** The agent process and a client of its API. */
export interface AgentProcess {
  readonly client: CelliumClient;
  /** The agent's process ID (for /proc/<pid>/status). */
  readonly pid: number;
  stop(): Promise<void>;
}

/** Where an agent keeps its files, its pool, and any further flags (`{ 'enable-ipv4-big-tcp': true }`). */
export interface AgentRun {
  readonly dir: string;
  readonly bpfRoot: string;
  readonly socketPath: string;
  readonly pool: string;
  readonly flags?: Readonly<Record<string, string | number | boolean>>;
  /** Node options for the agent process (`--trace-gc`), and a reader of its stdout (ignored otherwise). */
  readonly nodeFlags?: readonly string[];
  readonly onStdout?: (chunk: string) => void;
}

/** Starts bin/cellium-agent.js with this run's paths; resolves once its CNI server answers. */
export async function startAgent(run: AgentRun): Promise<AgentProcess> {
  const { dir, socketPath } = run;
  const flags = {
    'state-dir': join(dir, 'state'), 'socket-path': socketPath, 'cni-delete-queue-dir': join(dir, 'queue'), 'bpf-root': run.bpfRoot,
    'ipv4-range': run.pool, 'endpoint-gc-interval': '1h', ...run.flags,
  };
  // CELLIUM_* variables tune the agent under test, e.g. CELLIUM_DATAPATH_MODE=memory or CELLIUM_BPF_ATTACH_MODE=tcx
  // CELLIUM_BENCH_AGENT_NODE_FLAGS adds node options to every agent a bench starts, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`
  const extra = (process.env.CELLIUM_BENCH_AGENT_NODE_FLAGS ?? '').split(' ').filter((f) => f);
  const child: ChildProcess = spawn(process.execPath, [...extra, ...(run.nodeFlags ?? []), join(root(), 'bin', 'cellium-agent.js'), ...Object.entries(flags).map(([k, v]) => `--${k}=${v}`)], {
    // the thread pool as deploy/ sizes it (UV_THREADPOOL_SIZE=16; a variable of the bench's own environment wins)
    env: { UV_THREADPOOL_SIZE: '16', ...process.env }, stdio: ['ignore', run.onStdout ? 'pipe' : 'ignore', 'pipe'],
  });
  if (run.onStdout) child.stdout!.on('data', (c: Buffer) => run.onStdout!(c.toString()));
  let tail = '';
  child.stderr!.on('data', (c: Buffer) => (tail = (tail + c.toString()).slice(-4000)));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const client = new CelliumClient({ socketPath });
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  };
  // ready once the shim's STATUS succeeds (the CNI server serves after its DEL queue replay)
  const status = JSON.stringify({ cniVersion: '1.1.0', name: 'cellium', type: 'cellium-cni', 'socket-path': socketPath });
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`cellium-agent exited with ${child.exitCode}: ${tail}`);
    const r = spawnSync(join(root(), 'bin', 'cellium-cni'), { env: { CNI_COMMAND: 'STATUS' }, input: status, encoding: 'utf8' });
    if (r.status === 0) return { client, pid: child.pid!, stop };
    if (i > 600) {
      await stop();
      throw new Error(`cellium-agent did not become ready within 60 s: ${tail}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** VmRSS and VmHWM (its high-water mark) of a process, in MB (/proc/<pid>/status). */
export function rss(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key: string): number => Number(new RegExp(`^${key}:\\s+(\\d+) kB$`, 'm').exec(status)?.[1] ?? NaN);
  return { rss: Math.round(kb('VmRSS') / 1024), hwm: Math.round(kb('VmHWM') / 1024) };
}

/** CPU time a process has used so far (user + system), in ms (/proc/<pid>/stat, clock ticks of 10 ms). */
export function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
  // fields from the state (3rd of stat(5)) on: utime is the 14th, stime the 15th
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** CPU time (ms) of a process's main thread and of all its other threads (libuv pool, V8 helpers), user and system apart. */
export interface ThreadCpu {
  readonly mainUser: number;
  readonly mainSys: number;
  readonly otherUser: number;
  readonly otherSys: number;
}

/** The CPU time so far of each thread of `pid` (/proc/<pid>/task/<tid>/stat), the main thread (tid = pid) apart. */
export function threadCpuMs(pid: number): ThreadCpu {
  let mainUser = 0, mainSys = 0, otherUser = 0, otherSys = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    } catch {
      continue; // the thread ended meanwhile
    }
    const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
    const user = Number(fields[11]) * 10, sys = Number(fields[12]) * 10;
    if (Number(tid) === pid) {
      mainUser += user;
      mainSys += sys;
    } else {
      otherUser += user;
      otherSys += sys;
    }
  }
  return { mainUser, mainSys, otherUser, otherSys };
}

/** b - a, per `n` (ms per endpoint). */
export function threadCpuPer(a: ThreadCpu, b: ThreadCpu, n: number): ThreadCpu {
  const d = (k: keyof ThreadCpu): number => (n ? (b[k] - a[k]) / n : 0);
  return { mainUser: d('mainUser'), mainSys: d('mainSys'), otherUser: d('otherUser'), otherSys: d('otherSys') };
}
