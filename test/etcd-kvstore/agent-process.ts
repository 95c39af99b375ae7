// An agent process (bin/cellium-agent.js, memory datapath) in kvstore mode for the kill and outage
// tests: its own state under `dir`, killed at teardown if still running, ready once status is Ok.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { CelliumClient } from '../../src/api/client.js';
import type { TestLike } from '../../src/hive/index.js';
import type { TestEtcd } from '../kvstore/etcd.js';

const repo = join(import.meta.dirname, '../..');

/** Whether dist/ holds the built agent the process runs. */
export const agentBuilt = existsSync(join(repo, 'dist/src/cmd/agent.js'));

/** A running agent process: its client and the tail of its log. */
export interface AgentProc { proc: ChildProcess; client: CelliumClient; log: () => string }

/** What differs between the tests' agents. */
export interface AgentProcOptions {
  name: string;
  ip: string;
  /** --kvstore-lease-ttl, e.g. `2s`. */
  leaseTtl: string;
  /** IPAM flags (a fixed --ipv4-range or the cluster pool's). */
  ipam: string[];
  /** The client's per-request timeout. */
  timeoutMs: number;
}

/** Polls fn (errors count as not yet) until it returns a truthy value; throws naming `what` after ms. */
export async function until<T>(what: string, fn: () => Promise<T | undefined | false>, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Starts an agent process on `etcd` with its state under `dir`; resolves once its status is Ok. */
export async function startAgentProc(t: TestLike, etcd: TestEtcd, dir: string, o: AgentProcOptions): Promise<AgentProc> {
  const socket = join(dir, 'cellium.sock');
  const proc = spawn(process.execPath, [join(repo, 'bin/cellium-agent.js'),
    '--datapath-mode=memory', `--state-dir=${dir}/state`, `--socket-path=${socket}`, `--cni-delete-queue-dir=${dir}/dq`, `--bpf-root=${dir}/bpf`,
    '--kvstore=etcd', `--kvstore-opt=etcd.config=${etcd.configFile()}`, `--kvstore-lease-ttl=${o.leaseTtl}`, `--node-name=${o.name}`, `--node-ip=${o.ip}`,
    ...o.ipam, '--ipv6-range='], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  proc.stderr!.on('data', (b: Buffer) => (log = (log + b.toString()).slice(-20000)));
  t.teardown(() => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
  });
  const client = new CelliumClient({ socketPath: socket }, { timeoutMs: o.timeoutMs });
  t.teardown(() => client.close());
  await until(`${o.name} to answer`, async () => {
    if (proc.exitCode !== null) throw new Error(`${o.name} exited: ${log}`);
    return existsSync(socket) && (await client.status({ brief: true })).cilium?.state === 'Ok';
  });
  return { proc, client, log: () => log };
}
