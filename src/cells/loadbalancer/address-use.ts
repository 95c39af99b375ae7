/**
 * Which addresses a frontend or backend may not be. A frontend is translated by bpf_lxc and, for
 * host processes, by bpf_sock at connect: an unspecified, loopback, multicast or broadcast
 * frontend would take over the node's own connections (every `connect(127.0.0.1:PORT)` of every
 * host process sent to the service's backends) or packets no service can answer. Link-local
 * frontends stay allowed (node-local DNS caches use 169.254.20.10). A backend may be loopback
 * (socket LB redirects host processes to a local server), never unspecified, multicast or broadcast.
 */
import { cidrContainsAddr, parseAddr, parseCidr, type Cidr } from '../../lib/addr.js';

const table = (rows: ReadonlyArray<readonly [string, string]>): ReadonlyArray<readonly [Cidr, string, string]> => rows.map(([c, why]) => [parseCidr(c), c, why] as const);

const NEVER = table([
  ['0.0.0.0/8', 'an unspecified ("this network") address'],
  ['224.0.0.0/4', 'a multicast address'],
  ['240.0.0.0/4', 'a reserved (class E) or the broadcast address'],
  ['::/128', 'the unspecified address'],
  ['ff00::/8', 'a multicast address'],
]);

const LOOPBACK = table([
  ['127.0.0.0/8', 'a loopback address'],
  ['::1/128', 'the loopback address'],
]);

function match(ip: string, rows: ReadonlyArray<readonly [Cidr, string, string]>): string | undefined {
  const a = parseAddr(ip);
  if (!a) return undefined;
  for (const [cidr, text, why] of rows) if (cidrContainsAddr(cidr, a)) return `it is ${why} (${text})`;
  return undefined;
}

/** Why the canonical address `ip` cannot be a frontend's, or undefined when it can. */
export function whyNotFrontendAddress(ip: string): string | undefined {
  return match(ip, NEVER) ?? match(ip, LOOPBACK);
}

/** Why the canonical address `ip` cannot be a backend's, or undefined when it can. */
export function whyNotBackendAddress(ip: string): string | undefined {
  return match(ip, NEVER);
}
