/**
 * Which events a monitor subscriber wants (`cellium monitor --type ... --related-to ...`).
 */
import { MONITOR_EVENT_TYPES, type MonitorEvent, type MonitorEventType } from './events.js';

/** A subscriber's filter; empty lists mean everything. */
export interface MonitorFilter {
  readonly types: readonly MonitorEventType[];
  readonly relatedTo: readonly number[];
}

/** Whether `e` passes the filter. */
export function matchesFilter(f: MonitorFilter, e: MonitorEvent): boolean {
  return (f.types.length === 0 || f.types.includes(e.type)) && (f.relatedTo.length === 0 || f.relatedTo.includes(e.endpointId));
}

/** Parses `--type` values: each one of drop, trace, policy-verdict; throws naming the value and the choices. */
export function parseEventTypes(values: readonly string[]): MonitorEventType[] {
  return values.map((v) => {
    if (!(MONITOR_EVENT_TYPES as readonly string[]).includes(v)) throw new Error(`--type "${v}" is not an event type: use one of ${MONITOR_EVENT_TYPES.join(', ')}`);
    return v as MonitorEventType;
  });
}
