/**
 * Cellium's BPF maps (Cilium's pkg/maps): the C layouts of bpf/lib/common.h as codecs, the map
 * specs of bpf/lib/maps.h, and the maps opened, sized and synced: cellium_lxc, cellium_ipcache,
 * the per-endpoint policy maps, cellium_metrics, the global conntrack maps (ct/) and the
 * load-balancing maps (lb/).
 */
export * from './layout.js';
export {
  openIPCacheMap, openLxcMap, openPolicyMap, removePolicyMap, policyMapPath, syncPolicyMap, readDropCounters, readTraffic,
  type TrafficCounter, type TrafficCounters,
  type IPCacheMap, type LxcMap, type PolicyMap, type PolicySyncResult,
} from './cellium-maps.js';
export * from './ct/layout.js';
export {
  CtMaps, flushCtMaps, layoutText, openExact, sweepAddresses, sweepExpired, sweepMap,
  type CtMap, type MapReplacement, type SweepOptions, type SweepResult,
} from './ct/maps.js';
export { CT_STATS_MAP, CT_STATS_SPEC, readCtCounts, type CtMapCounts } from './ct/stats.js';
export * from './lb/index.js';
