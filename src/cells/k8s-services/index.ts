/**
 * Services from Kubernetes (the k8s-services cell): Services and EndpointSlices watched from the
 * apiserver kept in the load balancer's service manager as services of source `apiserver`, live,
 * behind the cache-sync gate. See docs/cells/k8s.md.
 */
export { K8sServiceSync, SERVICE_PROXY_NAME, SERVICE_HEADLESS, notProxied, type ProblemReporter, type SyncKind, type FlushResult } from './sync.js';
export { REASON_INVALID, REASON_NOT_APPLIED } from './errors.js';
export { k8sServicesCell } from './cell.js';
