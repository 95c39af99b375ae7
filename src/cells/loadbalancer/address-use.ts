/**
 * Which addresses a frontend or backend may not be. A frontend is translated by bpf_lxc and, for
 * host processes, by bpf_sock at connect: an unspecified, loopback, multicast or broadcast
 * frontend would take over the node's own connections (every `connect(127.0.0.1:PORT)` of every
 * host process sent to the service's backends) or packets no service can answer. Link-local
 * frontends stay allowed (node-local DNS caches use 169.254.20.10). The one exception is a
 * NodePort frontend on the unspecified address itself (0.0.0.0 or ::, Cilium's surrogate): it
 * stands for "this port on every address of the node", which bpf_sock resolves only for
 * destinations that are the node's own (see docs/cells/loadbalancer.md, NodePort). A backend may
 * be loopback (socket LB redirects host processes to a local server), never unspecified,
 * multicast or broadcast.
 */
import { whySpecial } from '../../lib/special-addr.js';
import type { ServiceType } from './types.js';

/** Whether `ip` (canonical) is the unspecified address of its family: a NodePort surrogate's. */
export function isSurrogateAddress(ip: string): boolean {
  return ip === '0.0.0.0' || ip === '::';
}

/**
 * Why the canonical address `ip` cannot be the address of a frontend of type `type`, or undefined
 * when it can (the surrogate 0.0.0.0 / :: only for NodePort).
 */
export function whyNotFrontendAddress(ip: string, type?: ServiceType): string | undefined {
  if (type === 'NodePort' && isSurrogateAddress(ip)) return undefined;
  return whySpecial(ip, ['link-local']);
}

/** Why the canonical address `ip` cannot be a backend's, or undefined when it can. */
export function whyNotBackendAddress(ip: string): string | undefined {
  return whySpecial(ip, ['link-local', 'loopback']);
}
