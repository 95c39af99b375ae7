/**
 * What the k8s-services cell reports about a Service or EndpointSlice it could not apply: the
 * Event reasons and messages (each says what stays in force and the fix; the LBError inside names
 * the field).
 */

/** Event reason: the object cannot be translated (a field is invalid); its previous version stays. */
export const REASON_INVALID = 'InvalidObject';
/** Event reason: the Service is valid but the load balancer refused it (an address taken, the node's own address). */
export const REASON_NOT_APPLIED = 'ServiceNotApplied';

/** A Service or EndpointSlice whose translation failed. */
export function invalidObject(kind: string, key: string, problem: string): string {
  return `${kind} ${key} not applied (its previous version, if any, stays in the LB maps): ${problem}`;
}

/** A Service the service manager refused (collision with another service's frontend, a node address, the node-port range). */
export function serviceRefused(key: string, problem: string): string {
  return `Service ${key} not applied (its previous version, if any, stays in the LB maps; retried whenever the services change): ${problem}`;
}
