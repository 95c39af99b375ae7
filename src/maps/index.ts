/**
 * Cellium's BPF maps (Cilium's pkg/maps), one folder per map with its C layout (bpf/lib/common.h)
 * as codecs, its spec (bpf/lib/maps.h) and how it is opened: the per-endpoint policy maps
 * (policy/), cellium_ipcache (ipcache/), cellium_lxc (lxc/), cellium_metrics (metrics/), the
 * monitor's ring buffer (events/), the global conntrack maps (ct/), the load-balancing maps (lb/)
 * and the shared bpf_lxc's endpoint and policy-map maps (endpoints/).
 */
export { hostOrder } from '../bpf/host-order.js';
export { Family, formatMac, macBytes, writeAddr } from './addr-codec.js';
export * from './policy/index.js';
export * from './ipcache/index.js';
export * from './lxc/index.js';
export * from './endpoints/index.js';
export * from './metrics/index.js';
export * from './events/index.js';
export * from './ct/layout.js';
export {
  CtMaps, flushCtMaps, layoutText, openExact, sweepAddresses, sweepExpired, sweepMap,
  type CtMap, type MapReplacement, type SweepOptions, type SweepResult,
} from './ct/maps.js';
export { CT_STATS_MAP, CT_STATS_SPEC, readCtCounts, type CtMapCounts } from './ct/stats.js';
export * from './lb/index.js';
