/**
 * Configuration of the CNI server cell: `--cni-delete-queue-dir`, `--cni-mtu` and BIG TCP
 * (`--enable-ipv4-big-tcp`, `--enable-ipv6-big-tcp`, `--big-tcp-device`).
 */
import { bool, int, string, type ValuesOf } from '../../hive/config/fields.js';
import { token } from '../../hive/token.js';
import { dirname, join, resolve } from 'node:path';
import { DEFAULT_DELETE_QUEUE_DIR } from '../../cni/protocol.js';
import { defaultStateDir } from '../statedir/index.js';

/**
 * The default `--cni-delete-queue-dir`: the shim's `/var/run/cellium/delete-queue` as root;
 * otherwise beside the per-user state directory (`$XDG_STATE_HOME/cellium/delete-queue`, else
 * `~/.local/state/cellium/delete-queue`), never a root-owned or working-directory path.
 */
export function defaultDeleteQueueDir(uid: number | undefined = process.getuid?.(), env: NodeJS.ProcessEnv = process.env, home?: string): string {
  if (uid === 0) return DEFAULT_DELETE_QUEUE_DIR;
  return join(dirname(defaultStateDir(uid, env, home)), 'delete-queue');
}

/** Schema of the CNI server configuration. */
export const cniServerConfigSchema = {
  cniDeleteQueueDir: {
    ...string(defaultDeleteQueueDir(), 'Directory of DEL requests the cellium-cni shim queued while the agent was down; replayed at start'),
    parse(raw: unknown): string {
      if (typeof raw !== 'string' || raw.trim() === '') {
        throw new Error(`expected a directory path (e.g. ${DEFAULT_DELETE_QUEUE_DIR}, where the shim queues DELs), got ${JSON.stringify(raw)}`);
      }
      return resolve(raw.trim()); // once, at start: a later chdir changes nothing
    },
  },
  cniMtu: int(1500, "MTU of pod interfaces (a network configuration's `mtu` key overrides it)", { min: 576, max: 65535 }),
  enableIpv4BigTcp: bool(false, "IPv4 BIG TCP: both ends of each new pod veth get the host device's gso_ipv4_max_size and gro_ipv4_max_size (kernel 6.3 or later)"),
  enableIpv6BigTcp: bool(false, "IPv6 BIG TCP: both ends of each new pod veth get the host device's gso_max_size and gro_max_size (kernel 5.19 or later)"),
  bigTcpDevice: string('', "The host device whose GSO/GRO maximums BIG TCP copies to pod veths (default: the device of the node's default route)"),
};

/** The resolved CNI server configuration. */
export type CniServerConfig = ValuesOf<typeof cniServerConfigSchema>;

/** Token for the CNI server configuration. */
export const CniServerConfigToken = token<CniServerConfig>('CniServerConfig');
