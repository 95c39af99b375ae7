/**
 * `GET /v1/cellium/monitor` (operation GetCelliumMonitor): the monitor's stream, one JSON record a
 * line (application/x-ndjson) until the client goes away. A reader slower than the events loses
 * them rather than making the agent buffer without bound: while its socket's buffer is full,
 * events for it are counted, and a `lost` record says how many once it drained.
 */
import type { Router } from 'express';
import { flowJson, matchesFilter, type MonitorEventType, type MonitorFilter } from '../../monitor/index.js';
import { HttpError } from '../api-server/types.js';
import type { ApiOperations, ApiResponse } from '../api-server/types.js';
import type { MonitorAgent, MonitorRecord } from './agent.js';

/** The operationId of the monitor stream in api/openapi.yaml. */
export const MONITOR_OPERATION_ID = 'GetCelliumMonitor';
/** The most monitor streams served at once. */
export const MAX_MONITOR_STREAMS = 32;

const list = (v: unknown): unknown[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

/** The filter of a validated request's query. */
export function filterOf(query: Readonly<Record<string, unknown>>): MonitorFilter {
  return { types: list(query.type) as MonitorEventType[], relatedTo: list(query['related-to']).map(Number) };
}

/** The monitor router. */
export function monitorRouter(ops: ApiOperations, agent: MonitorAgent): Router {
  const r = ops.router();
  ops.serve(r, MONITOR_OPERATION_ID, (_req, res) => {
    if (agent.listeners >= MAX_MONITOR_STREAMS) throw new HttpError(429, `${MAX_MONITOR_STREAMS} monitor streams are open already: close one (each cellium monitor is one stream)`, { 'retry-after': '1' });
    stream(res, agent, filterOf(res.locals.api.query));
  });
  return r;
}

function stream(res: ApiResponse, agent: MonitorAgent, filter: MonitorFilter): void {
  res.status(200).set({ 'content-type': 'application/x-ndjson', 'cache-control': 'no-store' });
  const write = (rec: object): void => void res.write(`${JSON.stringify(rec)}\n`);
  const what = [filter.types.length ? `types ${filter.types.join(', ')}` : 'all types', filter.relatedTo.length ? `endpoints ${filter.relatedTo.join(', ')}` : 'all endpoints'];
  write({ kind: 'info', message: agent.unavailable ?? `Listening for events (${what.join(', ')}). Press Ctrl-C to quit` });
  let lost = 0;
  const onRecord = (rec: MonitorRecord): void => {
    if (rec.kind === 'event' && !matchesFilter(filter, rec.event.event)) return;
    const count = rec.kind === 'lost' ? rec.count : 1;
    if (res.writableNeedDrain) {
      lost += count;
      return;
    }
    if (rec.kind === 'lost') write({ kind: 'lost', count: rec.count, why: rec.why });
    else write({ kind: 'event', flow: flowJson(rec.event) });
  };
  // not a job: one request's stream, unsubscribed when its HTTP response closes
  const sub = agent.records$.subscribe({ next: onRecord, complete: () => res.end() });
  res.on('drain', () => {
    if (lost === 0) return;
    write({ kind: 'lost', count: lost, why: 'this reader was slower than the events' });
    lost = 0;
  });
  res.on('close', () => sub.unsubscribe());
}
