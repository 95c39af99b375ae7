/**
 * The agent's state directory (`--state-dir`), shared by every cell that keeps state on disk:
 * endpoints write `<state-dir>/<id>/`, the identity allocator `<state-dir>/identities.json`, the
 * policy repository `<state-dir>/policies.json`.
 * One small config cell so the flag is declared once and injected wherever it is needed.
 */
import { config, module } from '../../hive/cell.js';
import { string, type ValuesOf } from '../../hive/config/fields.js';
import { token } from '../../hive/token.js';

/** The default state directory: `/var/run/cellium/state` as root, `./.cellium/state` otherwise. */
export function defaultStateDir(uid: number | undefined = process.getuid?.()): string {
  return uid === 0 ? '/var/run/cellium/state' : './.cellium/state';
}

/** Schema of the state-dir configuration. */
export const stateDirConfigSchema = {
  stateDir: {
    ...string(defaultStateDir(), 'Directory where the agent keeps endpoint, identity and policy state across restarts'),
    parse(raw: unknown): string {
      if (typeof raw !== 'string' || raw.trim() === '') {
        throw new Error(`expected a directory path (e.g. /var/run/cellium/state), got ${JSON.stringify(raw)}`);
      }
      return raw.trim();
    },
  },
};

/** The resolved state-dir configuration. */
export type StateDirConfig = ValuesOf<typeof stateDirConfigSchema>;

/** Token for the state-dir configuration. */
export const StateDirConfigToken = token<StateDirConfig>('StateDirConfig');

/** The statedir cell: declares `--state-dir` and provides StateDirConfigToken. */
export const statedirCell = module('statedir', 'Agent state directory', config(StateDirConfigToken, stateDirConfigSchema));
