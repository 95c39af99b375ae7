/** The monitor's ring buffer (bpf/lib/maps.h cellium_events): its name and spec (the event layouts are src/monitor's). */
import { MapType, type MapSpec } from '../../bpf/bpf-map.js';

/** Events ring buffer name. */
export const EVENTS_MAP = 'cellium_events';
/** cellium_events (the monitor's ring buffer, 256 KiB). */
export const EVENTS_MAP_SPEC: MapSpec = { name: EVENTS_MAP, type: MapType.RINGBUF, keySize: 0, valueSize: 0, maxEntries: 256 * 1024 };
