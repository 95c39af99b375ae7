/** Configuration of the CNI server cell: `--cni-delete-queue-dir` and `--cni-mtu`. */
import { int, string, type ValuesOf } from '../../hive/config/fields.js';
import { token } from '../../hive/token.js';
import { DEFAULT_DELETE_QUEUE_DIR } from '../../cni/protocol.js';

/** Schema of the CNI server configuration. */
export const cniServerConfigSchema = {
  cniDeleteQueueDir: string(DEFAULT_DELETE_QUEUE_DIR, 'Directory of DEL requests the cellium-cni shim queued while the agent was down; replayed at start'),
  cniMtu: int(1500, "MTU of pod interfaces (a network configuration's `mtu` key overrides it)", { min: 576, max: 65535 }),
};

/** The resolved CNI server configuration. */
export type CniServerConfig = ValuesOf<typeof cniServerConfigSchema>;

/** Token for the CNI server configuration. */
export const CniServerConfigToken = token<CniServerConfig>('CniServerConfig');
