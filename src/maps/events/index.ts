/** The monitor's ring buffer map (cellium_events). */
export { EVENTS_MAP, EVENTS_MAP_SPEC } from './layout.js';
