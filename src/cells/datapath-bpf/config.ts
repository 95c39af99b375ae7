/**
 * Configuration of the BPF datapath cell: where the maps and links are pinned, the map sizes, and
 * how often the reconcilers compare the kernel maps with the desired state.
 */
import { duration, int, oneOf, string, type ValuesOf } from '../../hive/config/fields.js';
import { token } from '../../hive/token.js';

/** Schema of the BPF datapath configuration. */
export const bpfDatapathConfigSchema = {
  bpfRoot: string('/sys/fs/bpf/cellium', 'Directory on a bpffs where the datapath pins its maps and program links (bpffs is mounted at /sys/fs/bpf when missing)'),
  bpfPolicyMapMax: int(16384, 'Entries of each endpoint policy map (cellium_policy_<id>)', { min: 16, max: 1 << 24 }),
  bpfLxcMapMax: int(65536, 'Entries of the local endpoints map (cellium_lxc)', { min: 16, max: 1 << 24 }),
  bpfIpcacheMapMax: int(65536, 'Entries of the IP to identity map (cellium_ipcache)', { min: 16, max: 1 << 24 }),
  bpfAttachMode: oneOf(['legacy', 'tcx', 'auto'] as const, 'legacy', 'How endpoint programs are attached: legacy clsact direct-action filters (about 1 ms each), tcx links (kernel >= 6.6; owned by the agent and pinned, but every attach and detach waits for an RCU grace period, about 15 ms, twice per endpoint), or auto (tcx when the kernel has it, else legacy)'),
  bpfMapPruneInterval: duration('1m', 'How often each map reconciler compares the kernel map with the desired state, removing what is not desired and rewriting what drifted (0 = never)'),
};

/** The resolved BPF datapath configuration. */
export type BpfDatapathConfig = ValuesOf<typeof bpfDatapathConfigSchema>;

/** Token for the BPF datapath configuration. */
export const BpfDatapathConfigToken = token<BpfDatapathConfig>('BpfDatapathConfig');
