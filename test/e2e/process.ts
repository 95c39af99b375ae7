// The real `cellium-agent` process for the privileged end-to-end tests (bin/cellium-agent.js, built
// dist/): spawned with flags, its JSON log lines kept, killed at cleanup if still running, and
// "ready" as a runtime sees it (the shim's STATUS succeeds).
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { TestLike } from '../../src/hive/index.js';
import { runShim } from '../cni-shim/run-shim.js';

/** The agent's entry point. */
export const AGENT_BIN = join(import.meta.dirname, '../../bin/cellium-agent.js');

/** Why tests of the agent process skip: dist/ not built (npm test builds it), or false. */
export function distMissing(): string | false {
  return existsSync(join(import.meta.dirname, '../../dist/src/cmd/agent.js')) ? false : 'dist/ not built: run npm run build (npm test builds it)';
}

/** A running agent process. */
export interface AgentProcess {
  readonly proc: ChildProcess;
  /** Settles when the process has exited. */
  readonly exited: Promise<void>;
  /** Its log so far (stderr, JSON lines, and stdout). */
  log(): string;
  /** Its log lines parsed as JSON (lines that are not JSON are left out). */
  records(): Array<Record<string, unknown>>;
}

/** Spawns the agent with `args`; killed with SIGKILL at cleanup if still running. */
export function spawnAgent(t: TestLike, args: readonly string[]): AgentProcess {
  const proc = spawn(process.execPath, [AGENT_BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  const keep = (d: Buffer): void => {
    log += d.toString();
  };
  proc.stdout!.on('data', keep);
  proc.stderr!.on('data', keep);
  const exited = new Promise<void>((r) => proc.on('exit', () => r()));
  t.teardown(async () => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
    await exited;
  });
  return {
    proc,
    exited,
    log: () => log,
    records: () => log.split('\n').flatMap((l) => {
      try {
        return l.startsWith('{') ? [JSON.parse(l) as Record<string, unknown>] : [];
      } catch {
        return [];
      }
    }),
  };
}

/** Polls the shim's STATUS on `socketPath` until it succeeds (the agent is ready) or `ms` passed. */
export async function waitReady(agent: AgentProcess, socketPath: string, ms = 60000): Promise<boolean> {
  const conf = JSON.stringify({ cniVersion: '1.1.0', name: 'cellium', type: 'cellium-cni', 'socket-path': socketPath });
  for (const end = Date.now() + ms; Date.now() < end; ) {
    if (agent.proc.exitCode !== null || agent.proc.signalCode !== null) return false;
    if ((await runShim({ CNI_COMMAND: 'STATUS' }, conf)).code === 0) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}
