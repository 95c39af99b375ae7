/**
 * Which addresses an endpoint may not hold. An endpoint's address goes into cellium_lxc and the
 * ipcache under the endpoint's identity, and its program lets the pod send from it: the
 * unspecified, loopback, multicast, broadcast and link-local addresses would give a pod a source it
 * must never have (127.0.0.1 is also one of the node's addresses: the host identity).
 */
import { whySpecial } from '../../lib/special-addr.js';

/** Why the canonical address `ip` cannot be an endpoint's, or undefined when it can. */
export function whyNotEndpointAddress(ip: string): string | undefined {
  return whySpecial(ip);
}
