/** The drop and forward counters map (bpf/lib/maps.h cellium_metrics): its slots, the drop reasons, its spec. */
import { MapType, type MapSpec } from '../../bpf/bpf-map.js';

/** Drop reasons: index in cellium_metrics / drop_event.reason -> name. */
export const DROP_REASONS: Readonly<Record<number, string>> = { 1: 'policy', 2: 'policy-deny', 3: 'invalid', 4: 'unsupported-l3', 5: 'ct-insert-failed', 6: 'no-service', 7: 'no-backend', 8: 'invalid-source' };

/** Metrics map name. */
export const METRICS_MAP = 'cellium_metrics';
/** cellium_metrics slots: direction * METRICS_DIR_STRIDE + drop reason (0: forwarded); METRICS_EVENTS_LOST. */
export const METRICS_DIR_STRIDE = 16;
/** The cellium_metrics slot counting monitor events the ring buffer had no room for. */
export const METRICS_EVENTS_LOST = 15;
/** cellium_metrics (per-CPU {u64 packets; u64 bytes} by direction and drop reason). */
export const METRICS_MAP_SPEC: MapSpec = { name: METRICS_MAP, type: MapType.PERCPU_ARRAY, keySize: 4, valueSize: 16, maxEntries: 2 * METRICS_DIR_STRIDE };
