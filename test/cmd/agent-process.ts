// The agent as a process for the tests of its command line and its systemd unit: flags that keep
// its files in a directory of the test's own with the memory datapath, and a stop by signal once
// it has started.
import { spawnSync, type ChildProcessWithoutNullStreams, type ChildProcessByStdio } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Readable } from 'node:stream';

/** bin/cellium-agent.js of this checkout. */
export const AGENT_BIN = join(import.meta.dirname, '../../bin/cellium-agent.js');
const built = existsSync(join(import.meta.dirname, '../../dist/src/cmd/agent.js'));

const knownFlags = new Set(
  built ? [...spawnSync(process.execPath, [AGENT_BIN, '--help'], { encoding: 'utf8' }).stdout.matchAll(/^ {2}--([a-z0-9-]+)=/gm)].map((m) => m[1]!) : [],
);

/** Flags that keep a test agent's files in a temp dir and its datapath in memory. */
export function isolatedFlags(dir: string): string[] {
  return [`--state-dir=${dir}/state`, `--socket-path=${dir}/cellium.sock`, '--datapath-mode=memory', `--bpf-root=${dir}/bpf`, `--cni-delete-queue-dir=${dir}/delete-queue`]
    .filter((f) => knownFlags.has(f.slice(2, f.indexOf('='))));
}

/** Sends `signal` to the agent once its log says "hive started"; resolves with its exit code and its stderr. */
export function stopOnceStarted(p: ChildProcessWithoutNullStreams | ChildProcessByStdio<null, Readable | null, Readable>, signal: NodeJS.Signals): Promise<{ code: number | null; err: string }> {
  let err = '';
  let sent = false;
  p.stderr.on('data', (d: Buffer) => {
    err += d.toString();
    if (!sent && err.includes('"hive started"')) {
      sent = true;
      p.kill(signal);
    }
  });
  return new Promise((resolve) => p.on('exit', (code) => resolve({ code, err })));
}
