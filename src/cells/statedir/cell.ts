/** The statedir cell's wiring: its module, providers and what they are built from (index.ts is its public face). */
import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { config, module } from '../../hive/cell.js';
import { string, type ValuesOf } from '../../hive/config/fields.js';
import { token } from '../../hive/token.js';

/**
 * The default state directory, never relative to the working directory (an agent restarted from
 * another directory must find its state): `/var/run/cellium/state` as root; otherwise
 * `$XDG_STATE_HOME/cellium/state`, else `~/.local/state/cellium/state`.
 */
export function defaultStateDir(uid: number | undefined = process.getuid?.(), env: NodeJS.ProcessEnv = process.env, home: string = homedir()): string {
  if (uid === 0) return '/var/run/cellium/state';
  const xdg = env.XDG_STATE_HOME;
  if (xdg && isAbsolute(xdg)) return join(xdg, 'cellium', 'state');
  return join(home, '.local', 'state', 'cellium', 'state');
}

/** Schema of the state-dir configuration. */
export const stateDirConfigSchema = {
  stateDir: {
    ...string(defaultStateDir(), 'Directory where the agent keeps endpoint, identity and policy state across restarts'),
    parse(raw: unknown): string {
      if (typeof raw !== 'string' || raw.trim() === '') {
        throw new Error(`expected a directory path (e.g. /var/run/cellium/state), got ${JSON.stringify(raw)}`);
      }
      // a relative path is taken from the directory the agent starts in, once: logs and the
      // status name the absolute path, and a later chdir changes nothing
      return resolve(raw.trim());
    },
  },
};

/** The resolved state-dir configuration. */
export type StateDirConfig = ValuesOf<typeof stateDirConfigSchema>;

/** Token for the state-dir configuration. */
export const StateDirConfigToken = token<StateDirConfig>('StateDirConfig');

/** The statedir cell: declares `--state-dir` and provides StateDirConfigToken. */
export const statedirCell = module('statedir', 'Agent state directory', config(StateDirConfigToken, stateDirConfigSchema));
