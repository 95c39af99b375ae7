/**
 * The demo's narration and process helpers: steps are printed as headings, every command the demo
 * runs is printed as `$ …` with its output, so a reader can repeat any step by hand.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CelliumClient } from '../../api/client.js';
import type { CliIO } from '../../cli/context.js';
import { runCli } from '../../cli/main.js';
import { sleep } from '../../hive/index.js';

/** The repository root (dist/src/cmd/demo → four levels up; src/cmd/demo under ts-node → three). */
export const repoRoot = ((): string => {
  for (const up of ['../../../..', '../../..']) {
    const p = join(import.meta.dirname, up);
    if (existsSync(join(p, 'package.json'))) return p;
  }
  throw new Error('cannot find the repository root from ' + import.meta.dirname);
})();

/** Paths of the executables the demo uses. */
export const bins = {
  agent: join(repoRoot, 'bin/cellium-agent.js'),
  cli: join(repoRoot, 'bin/cellium.js'),
  shim: join(repoRoot, 'bin/cellium-cni'),
};

/** Output sink (stdout by default; tests capture it). */
export interface Narrator {
  step(title: string): void;
  say(text: string): void;
  cmd(line: string, output: string): void;
}

/** A narrator printing to stdout. */
export function consoleNarrator(): Narrator {
  let n = 0;
  return {
    step: (title) => process.stdout.write(`\n==> ${++n}. ${title}\n`),
    say: (text) => process.stdout.write(`    ${text}\n`),
    cmd: (line, output) => process.stdout.write(`$ ${line}\n${output.trimEnd() ? output.trimEnd() + '\n' : ''}`),
  };
}

/** The result of a command. */
export interface RunResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a command, prints it with its output, and returns the result (never throws on exit codes). */
export function run(n: Narrator, argv: readonly string[], opts: { input?: string; env?: NodeJS.ProcessEnv; show?: string; quiet?: boolean } = {}): RunResult {
  const r = spawnSync(argv[0]!, argv.slice(1), { input: opts.input, env: opts.env ?? process.env, encoding: 'utf8', timeout: 120_000 });
  const res = { code: r.status ?? 1, stdout: r.stdout ?? '', stderr: r.stderr ?? (r.error?.message ?? '') };
  if (!opts.quiet) n.cmd(opts.show ?? argv.join(' '), res.stdout + (res.code !== 0 ? res.stderr : ''));
  return res;
}

/** Runs a command and throws with its output when it fails. */
export function must(n: Narrator, argv: readonly string[], opts: Parameters<typeof run>[2] = {}): RunResult {
  const r = run(n, argv, opts);
  if (r.code !== 0) throw new Error(`${opts.show ?? argv.join(' ')} failed (exit ${r.code}): ${r.stderr.trim() || r.stdout.trim()}`);
  return r;
}

/**
 * The `cellium` CLI against the demo agent's socket, shown as `$ cellium …`. It runs in this
 * process (the same runCli the `cellium` command runs), so the demo pays no process start per step.
 */
export async function cli(n: Narrator, socket: string, args: readonly string[], quiet = false): Promise<RunResult> {
  let stdout = '';
  let stderr = '';
  const io: CliIO = { stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t), readFile: (f) => readFile(f, 'utf8'), env: process.env };
  const code = await runCli(['--socket-path', socket, ...args], io);
  if (!quiet) n.cmd(`cellium ${args.join(' ')}`, stdout + (code !== 0 ? stderr : ''));
  return { code, stdout, stderr };
}

/**
 * Starts the agent in the background; resolves once its API answers. `wrap` runs it through another
 * command (the cluster demo: `nsenter --net=<node netns>`, which keeps the BPF filesystem in view).
 */
export async function startAgent(n: Narrator, flags: readonly string[], socket: string, wrap: readonly string[] = []): Promise<ChildProcess> {
  n.cmd(`${wrap.length ? `${wrap.join(' ')} ` : ''}cellium-agent ${flags.join(' ')} &`, '');
  const argv = [...wrap, process.execPath, bins.agent, ...flags];
  const p = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  p.stderr!.on('data', (d: Buffer) => (log += d.toString()));
  const client = new CelliumClient({ socketPath: socket }, { timeoutMs: 2000 });
  try {
    for (let i = 0; i < 600; i++) {
      if (p.exitCode !== null) throw new Error(`the agent exited (${p.exitCode}):\n${log}`);
      if (existsSync(socket) && (await client.status({ brief: true }).then(() => true, () => false))) return p;
      await sleep(100);
    }
  } finally {
    client.close();
  }
  p.kill('SIGKILL');
  throw new Error(`the agent did not answer on ${socket} within 60 s:\n${log}`);
}

/** Stops the agent with SIGTERM and waits for it (SIGKILL after 30 s); leaves no timer behind. */
export async function stopAgent(n: Narrator, p: ChildProcess): Promise<number | null> {
  if (p.exitCode !== null) return p.exitCode;
  n.cmd('kill -TERM <agent>', '');
  const done = new Promise<number | null>((r) => p.once('exit', (c) => r(c)));
  const giveUp = new AbortController();
  p.kill('SIGTERM');
  try {
    return await Promise.race([done, sleep(30_000, giveUp.signal).then(() => (p.kill('SIGKILL'), null), () => null)]);
  } finally {
    giveUp.abort();
  }
}
