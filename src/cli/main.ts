/**
 * The `cellium` CLI: talks to the agent's API over its unix socket. Command groups live in
 * commands/, one file each, and are registered in COMMAND_GROUPS below.
 */
import { readFile } from 'node:fs/promises';
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Command, CommanderError, Option } from 'commander';
import { defaultSocketPath } from '../api/socket-path.js';
import { CliRuntime, EXIT, describeError, type CliIO, type CommandGroup } from './context.js';
import { configCommands } from './commands/config.js';
import { endpointCommands } from './commands/endpoint.js';
import { identityCommands } from './commands/identity.js';
import { installCniCommands } from './commands/install-cni.js';
import { ipamCommands } from './commands/ipam.js';
import { mapCommands } from './commands/map.js';
import { policyCommands } from './commands/policy.js';
import { statusCommands } from './commands/status.js';

/** Every command group, in help order. Add a group here (e.g. install-cni) to make it a command. */
export const COMMAND_GROUPS: readonly CommandGroup[] = [
  statusCommands,
  endpointCommands,
  identityCommands,
  policyCommands,
  ipamCommands,
  mapCommands,
  configCommands,
  installCniCommands,
];

/** The CLI's version (package.json's). */
export const CLI_VERSION = '0.1.0';

/** The real process's IO. */
export function processIO(): CliIO {
  return {
    stdout: (t) => process.stdout.write(t),
    stderr: (t) => process.stderr.write(t),
    readFile: async (path) => (path === '-' ? readStdin() : readFile(path, 'utf8')),
    env: process.env,
  };
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
    .option('-H, --host <url>', 'talk to an agent API on TCP instead (http://HOST:PORT, see cellium-agent --api-listen-address)')
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
