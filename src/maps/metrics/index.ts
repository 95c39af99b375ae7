/** The drop and forward counters map (cellium_metrics): slots, drop reasons, spec, readers. */
export * from './layout.js';
export { readDropCounters, readTraffic, type TrafficCounter, type TrafficCounters } from './map.js';
