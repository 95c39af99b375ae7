/**
 * Which addresses a frontend or backend may not be. A frontend is translated by bpf_lxc and, for
 * host processes, by bpf_sock at connect: an unspecified, loopback, multicast or broadcast
 * frontend would take over the node's own connections (every `connect(127.0.0.1:PORT)` of every
 * host process sent to the service's backends) or packets no service can answer. Link-local
 * frontends stay allowed (node-local DNS caches use 169.254.20.10). A backend may be loopback
 * (socket LB redirects host processes to a local server), never unspecified, multicast or broadcast.
 */
import { whySpecial } from '../../lib/special-addr.js';

/** Why the canonical address `ip` cannot be a frontend's, or undefined when it can. */
export function whyNotFrontendAddress(ip: string): string | undefined {
  return whySpecial(ip, ['link-local']);
}

/** Why the canonical address `ip` cannot be a backend's, or undefined when it can. */
export function whyNotBackendAddress(ip: string): string | undefined {
  return whySpecial(ip, ['link-local', 'loopback']);
}
