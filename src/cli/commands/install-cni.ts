/**
 * `cellium install-cni [--cni-bin-dir DIR] [--cni-conf-dir DIR] [--cni-log-file PATH |
 * --no-cni-log-file] [--cni-debug] [--uninstall]`: installs the cellium-cni shim into the CNI bin
 * directory and `05-cellium.conflist` (network `cellium`, cniVersion 1.0.0, plugin `cellium-cni`
 * with the agent's `socket-path`, from the global `--socket-path`, and the shim's `log-file` and
 * `enable-debug`) into the CNI configuration directory; `--uninstall` removes both. Files are
 * written under a temporary name and renamed, so a runtime never execs or reads a partial file.
 */
import { chmod, copyFile, mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { repoPath } from '../../api/repo-files.js';
import type { CommandGroup } from '../context.js';
import { CliFailure } from '../errors.js';

/** Where runtimes look for plugins and network configurations by default. */
export const DEFAULT_CNI_BIN_DIR = '/opt/cni/bin';
/** The default CNI configuration directory. */
export const DEFAULT_CNI_CONF_DIR = '/etc/cni/net.d';
/** The shim's name in the bin directory (the plugin `type`). */
export const CNI_PLUGIN_TYPE = 'cellium-cni';
/** The configuration file's name (05: before most other networks). */
export const CONFLIST_NAME = '05-cellium.conflist';
/** The network name. */
export const NETWORK_NAME = 'cellium';
/** The shim's call log written into the conflist by default (as cilium-cni's /var/run/cilium/cilium-cni.log). */
export const DEFAULT_CNI_LOG_FILE = '/var/run/cellium/cellium-cni.log';

/** The shim's log keys of the conflist: `logFile` false leaves the log out. */
export interface ShimLogOptions {
  readonly logFile?: string | false;
  readonly debug?: boolean;
}

/** The conflist for an agent socket (the log file defaults to DEFAULT_CNI_LOG_FILE). */
export function celliumConflist(socketPath: string, log: ShimLogOptions = {}): Record<string, unknown> {
  const logFile = log.logFile ?? DEFAULT_CNI_LOG_FILE;
  const plugin = {
    type: CNI_PLUGIN_TYPE,
    'socket-path': socketPath,
    ...(logFile !== false ? { 'log-file': logFile } : {}),
    'enable-debug': log.debug ?? false,
  };
  return { cniVersion: '1.0.0', name: NETWORK_NAME, plugins: [plugin] };
}

/** The install-cni options. */
export interface InstallCniOptions {
  readonly binDir: string;
  readonly confDir: string;
  readonly socketPath: string;
  /** The shim's log-file and enable-debug keys. */
  readonly log?: ShimLogOptions;
  /** The built shim (default bin/cellium-cni of this checkout). */
  readonly shim?: string;
}

/** Writes `data` to `path` atomically with `mode`. */
async function atomicWrite(path: string, write: (tmp: string) => Promise<void>, mode: number): Promise<void> {
  const tmp = `${path}.tmp-${process.pid}`;
  try {
    await write(tmp);
    await chmod(tmp, mode);
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}

/** Installs the shim and the conflist; returns the paths written. */
export async function installCni(o: InstallCniOptions): Promise<string[]> {
  const shim = o.shim ?? repoPath('bin', CNI_PLUGIN_TYPE);
  const logFile = o.log?.logFile;
  if (typeof logFile === 'string' && !isAbsolute(logFile)) {
    throw new CliFailure(`--cni-log-file ${JSON.stringify(logFile)} is not an absolute path: give one such as ${DEFAULT_CNI_LOG_FILE}, or --no-cni-log-file for no log`);
  }
  if (!existsSync(shim)) throw new CliFailure(`the shim ${shim} is not built: run \`npm run build\` first`);
  await mkdir(o.binDir, { recursive: true });
  await mkdir(o.confDir, { recursive: true });
  const bin = join(o.binDir, CNI_PLUGIN_TYPE);
  const conf = join(o.confDir, CONFLIST_NAME);
  await atomicWrite(bin, (tmp) => copyFile(shim, tmp), 0o755);
  await atomicWrite(conf, (tmp) => writeFile(tmp, `${JSON.stringify(celliumConflist(o.socketPath, o.log), null, 2)}\n`), 0o644);
  return [bin, conf];
}

/** Removes what installCni wrote; returns the paths that were there. */
export async function uninstallCni(o: Pick<InstallCniOptions, 'binDir' | 'confDir'>): Promise<string[]> {
  const paths = [join(o.binDir, CNI_PLUGIN_TYPE), join(o.confDir, CONFLIST_NAME)];
  const present = paths.filter((p) => existsSync(p));
  for (const p of present) await rm(p, { force: true });
  return present;
}

/** Registers `cellium install-cni`. */
export const installCniCommands: CommandGroup = (program, rt) => {
  program
    .command('install-cni')
    .description(`install the ${CNI_PLUGIN_TYPE} plugin and ${CONFLIST_NAME} for the agent at --socket-path (or remove them with --uninstall)`)
    .option('--cni-bin-dir <dir>', 'CNI plugin directory', DEFAULT_CNI_BIN_DIR)
    .option('--cni-conf-dir <dir>', 'CNI network configuration directory', DEFAULT_CNI_CONF_DIR)
    .option('--cni-log-file <path>', "the shim's call log (the conflist's log-file key)", DEFAULT_CNI_LOG_FILE)
    .option('--no-cni-log-file', 'write no log-file key: the shim logs nothing')
    .option('--cni-debug', "set the conflist's enable-debug key: the shim's log lines carry CNI_ARGS, CNI_PATH and the output")
    .option('--uninstall', 'remove the plugin and the configuration instead')
    .action(
      rt.action(async (ctx, opts: { cniBinDir: string; cniConfDir: string; cniLogFile: string | false; cniDebug?: boolean; uninstall?: boolean }) => {
        const dirs = { binDir: opts.cniBinDir, confDir: opts.cniConfDir };
        if (opts.uninstall) {
          const removed = await uninstallCni(dirs);
          ctx.print({ removed }, (r) => (r.removed.length ? r.removed.map((p) => `removed ${p}\n`).join('') : 'nothing to remove\n'));
          return;
        }
        const log = { logFile: opts.cniLogFile, debug: opts.cniDebug === true };
        const written = await installCni({ ...dirs, socketPath: ctx.options.socketPath, log });
        ctx.print({ installed: written, socketPath: ctx.options.socketPath }, (r) => `${r.installed.map((p) => `installed ${p}\n`).join('')}agent socket: ${r.socketPath}\n`);
      }),
    );
};
