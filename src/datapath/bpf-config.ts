/**
 * Configuration of the BPF datapath: where the maps and links are pinned, the map sizes, how often
 * the reconcilers compare the kernel maps with the desired state, and the conntrack garbage
 * collector's interval. The BPF datapath cell registers it; cells that use the pinned maps too
 * (loadbalancer) read it through this contract, not through the cell. (The conntrack lifetimes
 * are the datapath cell's: both datapaths use them.)
 */
import { duration, int, oneOf, string, type ValuesOf } from '../hive/config/fields.js';
import { token } from '../hive/token.js';

/** Schema of the BPF datapath configuration. */
export const bpfDatapathConfigSchema = {
  bpfRoot: string('/sys/fs/bpf/cellium', 'Directory on a bpffs where the datapath pins its maps and program links (bpffs is mounted at /sys/fs/bpf when missing)'),
  bpfPolicyMapMax: int(16384, 'Entries of each endpoint policy map (cellium_policy_<id>)', { min: 16, max: 1 << 24 }),
  bpfLxcMapMax: int(65536, 'Entries of the local endpoints map (cellium_lxc)', { min: 16, max: 1 << 24 }),
  bpfIpcacheMapMax: int(65536, 'Entries of the IP to identity map (cellium_ipcache)', { min: 16, max: 1 << 24 }),
  bpfAttachMode: oneOf(['legacy', 'tcx', 'auto'] as const, 'legacy', 'How endpoint programs are attached: legacy clsact direct-action filters (about 1 ms each), tcx links (kernel >= 6.6; owned by the agent and pinned, but every attach and detach waits for an RCU grace period, about 15 ms, twice per endpoint), or auto (tcx when the kernel has it, else legacy)'),
  bpfLxcProgram: oneOf(['per-endpoint', 'shared'] as const, 'shared', 'How endpoints get bpf_lxc: shared (one copy per node verified once; an endpoint add writes its entry in cellium_endpoints and its policy map slot, then attaches the same program; a restart over per-endpoint programs moves each endpoint to it atomically) or per-endpoint (each endpoint its own copy, verified by the kernel at every endpoint add with its constants folded in: the previous releases\' way)'),
  bpfMapPruneInterval: duration('1m', 'How often each map reconciler compares the kernel map with the desired state, removing what is not desired and rewriting what drifted (0 = never)'),
  bpfCtGlobalTcpMax: int(524288, 'Entries of the TCP conntrack maps (cellium_ct4_global, cellium_ct6_global; LRU, preallocated: about 120 and 144 bytes each)', { min: 1024, max: 1 << 24 }),
  bpfCtGlobalAnyMax: int(262144, 'Entries of the non-TCP conntrack maps (cellium_ct_any4_global, cellium_ct_any6_global)', { min: 1024, max: 1 << 24 }),
  conntrackGcInterval: duration('0s', 'Pin the conntrack garbage collection interval (0: adaptive, starting at 5m, shorter when many entries expired, at least 10s, longer when few, at most --conntrack-gc-max-interval)'),
  conntrackGcMaxInterval: duration('0s', 'Longest adaptive conntrack garbage collection interval (0: 12h, the cap for LRU maps)'),
};

/** The resolved BPF datapath configuration. */
export type BpfDatapathConfig = ValuesOf<typeof bpfDatapathConfigSchema>;

/** Token for the BPF datapath configuration. */
export const BpfDatapathConfigToken = token<BpfDatapathConfig>('BpfDatapathConfig');
