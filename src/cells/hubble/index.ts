/**
 * The hubble cell (module `hubble`): with --enable-hubble, the Hubble Observer gRPC API
 * (observer.Observer: GetFlows, ServerStatus, GetNodes; gRPC health) on --hubble-socket-path,
 * serving the monitor's events as Hubble flows from a ring of the last
 * --hubble-event-buffer-capacity flows, and the Hubble metrics named in --hubble-metrics.
 * docs/cells/hubble.md describes it.
 */
export * from './types.js';
export * from './errors.js';
export { HubbleConfigToken, hubbleConfigSchema, defaultHubbleSocketPath, HUBBLE_METRICS, MAX_EVENT_BUFFER_CAPACITY, type HubbleConfig, type HubbleMetric } from './config.js';
export { HubbleObserver, type LostEventCounts, type ObserverItem, type ObserverStats, type ServiceLookup, type WorkloadLookup } from './observer.js';
export { podWorkloadLookup } from './workloads.js';
export { HubbleServer, HEALTH_SERVICES } from './server.js';
export { checkRequest, storedFlows, serveGetFlows, flowResponseBytes, type GetFlowsCall } from './get-flows.js';
export { registerHubbleMetrics, registerLostEvents, flowProtocol, type FlowCounter } from './metrics.js';
export { frontendServices } from './services.js';
export * from './cell.js';
