/**
 * The monitor cell: reads the BPF datapath's events (drops, traces, policy verdicts) while somebody
 * listens and streams them on `GET /v1/cellium/monitor`, which `cellium monitor` reads.
 */
export { MonitorAgent, POLL_MS, type MonitorRecord } from './agent.js';
export { Enricher } from './enrich.js';
export { monitorRouter, filterOf, MONITOR_OPERATION_ID, MAX_MONITOR_STREAMS } from './routes.js';
export * from './cell.js';
