/**
 * The `cellium` CLI: talks to the agent's API over its unix socket. Command groups live in
 * commands/, one file each, and are registered in COMMAND_GROUPS below.
 */
import { readFile } from 'node:fs/promises';
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Command, CommanderError, Option } from 'commander';
import { packageVersion } from '../api/repo-files.js';
import { defaultSocketPath } from '../api/socket-path.js';
import { CliRuntime, EXIT, describeError, type CliIO, type CommandGroup } from './context.js';
import { bpfCommands } from './commands/bpf.js';
import { clusterCommands } from './commands/cluster.js';
import { configCommands } from './commands/config.js';
import { endpointCommands } from './commands/endpoint.js';
import { explainCommands } from './commands/explain.js';
import { identityCommands } from './commands/identity.js';
import { installCniCommands } from './commands/install-cni.js';
import { ipamCommands } from './commands/ipam.js';
import { mapCommands } from './commands/map.js';
import { monitorCommands } from './commands/monitor.js';
import { policyCommands } from './commands/policy.js';
import { serviceCommands } from './commands/service.js';
import { statusCommands } from './commands/status.js';
import { uiCommands } from './commands/ui.js';

/** Every command group, in help order. Add a group here (e.g. install-cni) to make it a command. */
export const COMMAND_GROUPS: readonly CommandGroup[] = [
  statusCommands,
  endpointCommands,
  identityCommands,
  policyCommands,
  serviceCommands,
  ipamCommands,
  mapCommands,
  bpfCommands,
  monitorCommands,
  explainCommands,
  configCommands,
  installCniCommands,
  clusterCommands,
  uiCommands,
];

/** The CLI's version (package.json's). */
export const CLI_VERSION = packageVersion();

/**
 * The real process's IO. A reader that goes away (`cellium status | head -1`, `| true`) ends the
 * CLI quietly with its exit code so far, as other Unix tools do, instead of an EPIPE stack trace.
 */
export function processIO(): CliIO {
  quietOnClosedPipe(process.stdout);
  quietOnClosedPipe(process.stderr);
  return {
    stdout: (t) => process.stdout.write(t),
    stderr: (t) => process.stderr.write(t),
    readFile: async (path) => (path === '-' ? readStdin() : readFile(path, 'utf8')),
    env: process.env,
  };
}

const guarded = new WeakSet<NodeJS.WriteStream>();

/** Exits quietly when `stream`'s reader closed the pipe (EPIPE); other write errors go to stderr, exit 1. */
export function quietOnClosedPipe(stream: NodeJS.WriteStream): void {
  if (guarded.has(stream)) return;
  guarded.add(stream);
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(typeof process.exitCode === 'number' ? process.exitCode : 0);
    if (stream !== process.stderr) process.stderr.write(`cellium: cannot write the output: ${err.message}\n`);
    process.exit(1);
  });
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** Builds the program with every command group registered. */
export function buildProgram(runtime: CliRuntime, groups: readonly CommandGroup[] = COMMAND_GROUPS): Command {
  const program = new Command('cellium')
    .description('Cellium CLI: inspect and manage the cellium agent over its API socket')
    .version(CLI_VERSION)
    .option('--socket-path <path>', "the agent's API socket", defaultSocketPath({ env: runtime.io.env }))
    .option('-H, --host <url>', 'talk to an agent API on TCP instead (http://HOST:PORT or https://HOST:PORT, see cellium-agent --api-listen-address)')
    .option('--token-file <path>', "with -H: send the token in this file (the agent's --api-token-file) as a bearer token")
    .option('--tls-ca-cert-files <paths>', "with -H https://: CA certificates (PEM, comma-separated) the agent's certificate must be signed by (default: the system's)")
    .option('--tls-client-cert-file <path>', 'with -H https://: client certificate (PEM) to present (agents with --api-tls-client-ca-files want one)')
    .option('--tls-client-key-file <path>', 'with -H https://: the private key of --tls-client-cert-file')
    .option('--tls-server-name <name>', "with -H https://: the name the agent's certificate must carry (default: the host of -H)")
    .addOption(new Option('-o, --output <format>', 'output format').choices(['table', 'json']).default('table'))
    .option('--timeout <duration>', 'give up on a request after this long (e.g. 30s, 2m)', '60s')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride()
    .configureOutput({ writeOut: runtime.io.stdout, writeErr: runtime.io.stderr });
  for (const register of groups) register(program, runtime);
  // Subcommands inherit output and exit handling.
  const inherit = (cmd: Command): void => {
    for (const sub of cmd.commands) {
      sub.exitOverride().configureOutput({ writeOut: runtime.io.stdout, writeErr: runtime.io.stderr });
      inherit(sub);
    }
  };
  inherit(program);
  return program;
}

/** Runs the CLI on `argv` (without node and the script); resolves with the exit code. */
export async function runCli(argv: readonly string[], io: CliIO = processIO()): Promise<number> {
  const runtime = new CliRuntime(io);
  const program = buildProgram(runtime);
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return runtime.exitCode;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? EXIT.ok : EXIT.usage;
    const { message, code } = describeError(err);
    io.stderr(`cellium: ${message}\n`);
    return code;
  }
}

/** True when this module is the process's entry (run directly or through bin/cellium.js). */
function isEntry(): boolean {
  try {
    return realpathSync(process.argv[1] ?? '') === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isEntry()) {
  process.exitCode = await runCli(process.argv.slice(2));
}
