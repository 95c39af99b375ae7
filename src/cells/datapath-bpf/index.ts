/**
 * The BPF datapath cell (module `datapath-bpf`): contributes the `bpf` provider to the datapath
 * selection (`--datapath-mode=bpf`, and `auto` when BPF works here), with pinned maps written by
 * reconcilers (desired-state tables with a status per object, batched writes, retries with
 * backoff, periodic prune and repair, a check that every endpoint's programs are still attached)
 * and the bpf_lxc loader. The endpoint cell's restore calls the datapath's removeStale and
 * restoreDone: what endpoints that no longer exist left is removed, then pruning starts.
 * docs/cells/datapath-bpf.md describes it.
 */
export { BpfDatapath, hostAddressCidrs } from './datapath.js';
export { BpfMaps, METRICS_MAP_NAME, type BpfMapsOptions, type BpfTableReport } from './maps.js';
export { BpfLoader, ifIndexOf } from './loader.js';
export { KernelMaps } from './kernel-maps.js';
export { BpfDatapathError } from './errors.js';
export { CtGarbageCollector, nextGcInterval, GC_MAX_LRU_MS, GC_MIN_MS, GC_PROBE_MS, GC_START_MS, type GcReport, type GcRun, type GcSettings } from './ct-gc.js';
export { CtPressure, CT_GROWTH_FLOOR, CT_PRESSURE_DEGRADED, type CtMapPressure } from './ct-pressure.js';
export { registerCtGcMetrics } from './ct-metrics.js';
export { registerTrafficMetrics } from './traffic-metrics.js';
export { BpfDatapathConfigToken, bpfDatapathConfigSchema, type BpfDatapathConfig } from '../../datapath/bpf-config.js';
export { policyObjectKey, type PolicyObject } from './tables.js';
export * from './cell.js';
