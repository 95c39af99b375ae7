/**
 * What every CLI command gets: the global options, a client of the agent, output in the chosen
 * format, progress on stderr, and one place that turns errors into a message and an exit code.
 */
import type { Command } from 'commander';
import { AgentUnreachableError, ApiError, ProtocolError } from '../api/errors.js';
import { CelliumClient } from '../api/client.js';
import { parseSeconds } from './args.js';
import { CliFailure, UsageError } from './errors.js';
import { json } from './output.js';
import { tcpTarget, type TcpTargetOptions } from './tcp-target.js';

/** Where the CLI reads and writes; tests pass their own. */
export interface CliIO {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  /** Reads a file (`-` means stdin). */
  readonly readFile: (path: string) => Promise<string>;
  readonly env: Readonly<Record<string, string | undefined>>;
}

/** The output formats. */
export type OutputFormat = 'table' | 'json';

/** The program-wide options (with TcpTargetOptions: -H and its token and TLS files). */
export interface GlobalOptions extends TcpTargetOptions {
  readonly socketPath: string;
  readonly output: OutputFormat;
  /** Give up on one request after this long (`30s`, `2m`); default 60 s. */
  readonly timeout?: string;
}

/** The context of one command run. */
export class CliContext {
  private clientInstance?: CelliumClient;

  constructor(
    readonly options: GlobalOptions,
    readonly io: CliIO,
  ) {}

  /** The agent client (created on first use, closed when the command ends). */
  get client(): CelliumClient {
    const timeoutMs = this.options.timeout === undefined ? undefined : parseSeconds(this.options.timeout) * 1000;
    this.clientInstance ??= new CelliumClient(tcpTarget(this.options) ?? { socketPath: this.options.socketPath }, timeoutMs === undefined ? {} : { timeoutMs });
    return this.clientInstance;
  }

  /** True with `-o json`. */
  get json(): boolean {
    return this.options.output === 'json';
  }

  /** Prints `data` as JSON with `-o json`, else what `render` makes of it. */
  print<T>(data: T, render: (data: T) => string): void {
    this.io.stdout(this.json ? json(data) : render(data));
  }

  /** A progress line on stderr (never on stdout, so `-o json` output stays clean). */
  progress(message: string): void {
    this.io.stderr(message + '\n');
  }

  /** Closes the client's connections. */
  close(): void {
    this.clientInstance?.close();
  }
}

/** Exit codes: 0 ok, 1 failure (agent unreachable, API error), 2 usage. */
export const EXIT = { ok: 0, failure: 1, usage: 2 } as const;

/** The message and exit code for an error thrown by a command. */
export function describeError(err: unknown): { message: string; code: number } {
  if (err instanceof AgentUnreachableError) return { message: err.message, code: EXIT.failure };
  if (err instanceof ApiError) {
    const expected = err.expected && !err.message.includes(err.expected) ? err.expected : undefined;
    const detail = [err.field && !err.message.includes(err.field) ? `field ${err.field}` : '', expected ? `expected ${expected}` : ''].filter(Boolean);
    const retry = err.retryAfter !== undefined ? `; retry after ${err.retryAfter}s` : '';
    const message = `${err.message}${detail.length ? ` (${detail.join(', ')})` : ''}`;
    return { message: `${message}${retry} [HTTP ${err.status}]`, code: EXIT.failure };
  }
  if (err instanceof UsageError) return { message: err.message, code: EXIT.usage };
  if (err instanceof CliFailure || err instanceof ProtocolError) return { message: err.message, code: EXIT.failure };
  return { message: err instanceof Error ? err.message : String(err), code: EXIT.failure };
}

/** Runs commands: builds their context from the global options and records the exit code. */
export class CliRuntime {
  /** The exit code of the last command. */
  exitCode: number = EXIT.ok;

  constructor(readonly io: CliIO) {}

  /**
   * Wraps a command handler for commander's `.action()`: the handler gets the context and the
   * positional arguments and options commander passes (the Command itself is dropped).
   */
  action<A extends unknown[]>(handler: (ctx: CliContext, ...args: A) => Promise<void>): (...args: unknown[]) => Promise<void> {
    return async (...args: unknown[]) => {
      const command = args[args.length - 1] as Command;
      const globals = command.optsWithGlobals<GlobalOptions>();
      const ctx = new CliContext(globals, this.io);
      try {
        await handler(ctx, ...(args.slice(0, -1) as A));
      } catch (err) {
        const { message, code } = describeError(err);
        this.io.stderr(`cellium: ${message}\n`);
        this.exitCode = code;
      } finally {
        ctx.close();
      }
    };
  }
}

/** A command group registers its commands on the program (one file per group under commands/). */
export type CommandGroup = (program: Command, runtime: CliRuntime) => void;
