/**
 * Where the agent's API socket lives by default; shared by the agent (which listens there) and the
 * `cellium` CLI (which connects there), so both agree without flags, from any working directory.
 */
import { join, resolve } from 'node:path';

/** The socket of an agent running as root (Cilium's layout, /var/run/cilium/cilium.sock). */
export const ROOT_SOCKET_PATH = '/var/run/cellium/cellium.sock';
/** The agent's own variable for --socket-path; the CLI honours it too. */
export const SOCKET_PATH_ENV = 'CELLIUM_SOCKET_PATH';
/** The older name of the same override, still honoured by both (after CELLIUM_SOCKET_PATH). */
export const LEGACY_SOCKET_PATH_ENV = 'CELLIUM_SOCK';

/** What the default depends on; each field defaults to the current process's. */
export interface SocketPathContext {
  readonly uid?: number;
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly cwd?: string;
}

/** The directory of a non-root agent's socket when XDG_RUNTIME_DIR is unset: /tmp/cellium-<uid>. */
export function privateSocketDir(uid: number): string {
  return `/tmp/cellium-${uid}`;
}

/**
 * The default socket path: `$CELLIUM_SOCKET_PATH` (or `$CELLIUM_SOCK`) when set; else
 * `/var/run/cellium/cellium.sock` for root; else `$XDG_RUNTIME_DIR/cellium/cellium.sock`; else
 * `/tmp/cellium-<uid>/cellium.sock`. Always absolute: the CLI finds the agent from any directory.
 */
export function defaultSocketPath(ctx: SocketPathContext = {}): string {
  const env = ctx.env ?? process.env;
  const override = env[SOCKET_PATH_ENV] || env[LEGACY_SOCKET_PATH_ENV];
  if (override) return resolve(ctx.cwd ?? process.cwd(), override);
  const uid = ctx.uid ?? (typeof process.getuid === 'function' ? process.getuid() : -1);
  if (uid === 0) return ROOT_SOCKET_PATH;
  const runtimeDir = env.XDG_RUNTIME_DIR;
  if (runtimeDir && runtimeDir.startsWith('/')) return join(runtimeDir, 'cellium', 'cellium.sock');
  return join(privateSocketDir(uid), 'cellium.sock');
}

/** How to start an agent listening on `socketPath`, for "cannot reach the agent" messages. */
export function startAgentHint(socketPath: string, ctx: SocketPathContext = {}): string {
  const flag = socketPath === defaultSocketPath(ctx) ? '' : ` --socket-path ${socketPath}`;
  const sudo = socketPath === ROOT_SOCKET_PATH && (ctx.uid ?? process.getuid?.() ?? 0) !== 0 ? 'sudo ' : '';
  return `start the agent with \`${sudo}cellium-agent${flag}\``;
}
