// The real `cellium-agent` process (bin/cellium-agent.js over the built dist/) for the privileged
// end-to-end tests: started with a temporary socket, state and DEL queue (memory datapath),
// optionally inside a network namespace (`ip netns exec`), waited for until the shim's STATUS
// succeeds, and killed when the test ends.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import type { TestLike } from '../../src/hive/index.js';
import { tempDir } from '../cni-server/helpers.js';
import { runShim } from '../cni-shim/run-shim.js';
import { needs } from '../needs.js';

/** The agent launcher. */
export const AGENT_BIN = join(import.meta.dirname, '../../bin/cellium-agent.js');

/** Why a test of the agent process skips (not root: `doing` says what it needs root for; not built), or false when it runs. */
export function agentProcessSkip(doing: string): string | false {
  const why = needs('root', doing);
  if (why) return why;
  const help = spawnSync(process.execPath, [AGENT_BIN, '--help'], { encoding: 'utf8' });
  if (!/--cni-delete-queue-dir=/.test(help.stdout ?? '')) return 'the built cellium-agent has no cni-server cell (run npm run build)';
  return false;
}

/** A started agent process. */
export interface AgentProcess {
  readonly proc: ChildProcess;
  readonly socketPath: string;
  /** Resolves with the exit code. */
  readonly exited: Promise<number | null>;
  /** Whether STATUS succeeded before the agent gave up or exited. */
  readonly up: boolean;
  /** What the agent wrote on stderr so far. */
  stderr(): string;
  /** A netconf text pointing the shim at this agent. */
  netconf(extra?: Record<string, unknown>, cniVersion?: string): string;
}

/** Starts the agent (in the network namespace `netnsName` when given) and waits up to 15 s for it. */
export async function startAgentProcess(t: TestLike, opts: { pool: string; netnsName?: string }): Promise<AgentProcess> {
  const dir = tempDir(t, 'agent-proc');
  const socketPath = join(dir, 'cellium.sock');
  const argv = [process.execPath, AGENT_BIN, `--socket-path=${socketPath}`, `--state-dir=${join(dir, 'state')}`, `--cni-delete-queue-dir=${join(dir, 'q')}`, `--ipv4-range=${opts.pool}`, '--datapath-mode=memory'];
  const cmd = opts.netnsName ? ['ip', 'netns', 'exec', opts.netnsName, ...argv] : argv;
  const proc = spawn(cmd[0]!, cmd.slice(1), { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  proc.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<number | null>((r) => proc.on('exit', r));
  t.teardown(() => {
    if (proc.exitCode === null) proc.kill('SIGKILL');
  });
  const netconf = (extra: Record<string, unknown> = {}, cniVersion = '1.0.0'): string =>
    JSON.stringify({ cniVersion, name: 'cellium', type: 'cellium-cni', 'socket-path': socketPath, ...extra });
  let up = false;
  for (let i = 0; i < 150 && !up && proc.exitCode === null; i++) {
    up = (await runShim({ CNI_COMMAND: 'STATUS' }, netconf({}, '1.1.0'))).code === 0;
    if (!up) await new Promise((r) => setTimeout(r, 100));
  }
  return { proc, socketPath, exited, up, stderr: () => stderr, netconf };
}
