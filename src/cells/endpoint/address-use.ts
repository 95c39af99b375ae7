/**
 * Which addresses an endpoint may not hold. An endpoint's address goes into cellium_lxc and the
 * ipcache under the endpoint's identity, and its program lets the pod send from it: the
 * unspecified, loopback, multicast, broadcast and link-local addresses would give a pod a source it
 * must never have (127.0.0.1 is also one of the node's addresses: the host identity).
 */
import { cidrContainsAddr, parseAddr, parseCidr } from '../../lib/addr.js';

const SPECIAL: ReadonlyArray<readonly [string, string]> = [
  ['0.0.0.0/8', 'an unspecified ("this network") address'],
  ['127.0.0.0/8', 'a loopback address'],
  ['169.254.0.0/16', 'a link-local address'],
  ['224.0.0.0/4', 'a multicast address'],
  ['240.0.0.0/4', 'a reserved (class E) or the broadcast address'],
  ['::/128', 'the unspecified address'],
  ['::1/128', 'the loopback address'],
  ['fe80::/10', 'a link-local address'],
  ['ff00::/8', 'a multicast address'],
];

/** Why the canonical address `ip` cannot be an endpoint's, or undefined when it can. */
export function whyNotEndpointAddress(ip: string): string | undefined {
  const a = parseAddr(ip);
  if (!a) return undefined;
  for (const [cidr, why] of SPECIAL) if (cidrContainsAddr(parseCidr(cidr), a)) return `it is ${why} (${cidr})`;
  return undefined;
}
