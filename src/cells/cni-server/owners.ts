/**
 * Who holds what, as the CNI server asks it: the endpoint a host interface belongs to (one
 * endpoint per interface) and the endpoint holding an IP.
 */
import type { EndpointManager, EndpointView } from '../endpoint/types.js';

/** The endpoint whose host interface is `ifName`, if any. */
export function interfaceOwner(manager: EndpointManager, ifName: string): EndpointView | undefined {
  return manager.getEndpoints().find((ep) => ep.ifName === ifName);
}

/** The endpoint holding `ip`, if any. */
export function ipHolder(manager: EndpointManager, ip: string): EndpointView | undefined {
  return manager.lookup(`${ip.includes(':') ? 'ipv6' : 'ipv4'}:${ip}`);
}
