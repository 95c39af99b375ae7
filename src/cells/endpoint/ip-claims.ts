/**
 * An endpoint's addresses in IPAM: every endpoint, created through the API or restored, records
 * its addresses with IPAM under its ID when it is exposed, so IPAM never hands out an address in
 * use (a free address of the pool is reserved for it, one allocated for it beforehand is taken
 * over, an out-of-pool one is recorded and logged); its removal gives them back. Addresses a
 * delegated IPAM plugin gave (`cellium.io/ipam-source`, --ipam=delegated-plugin) are the plugin's:
 * the node's IPAM neither records nor releases them.
 */
import { IPAMError, type Family, type IPAM } from '../ipam/index.js';
import type { Endpoint } from './endpoint.js';
import { EndpointError } from './errors.js';
import { addressesFromNodePool } from './spec.js';

/** The IPAM owner of the addresses an endpoint reserves: its pod (`ns/name`, as CNI ADD's), else its container id, else the endpoint. */
export function endpointIPOwner(ep: Endpoint, id: number): string {
  return ep.podName ?? ep.containerId ?? `endpoint ${id}`;
}

/** The addresses the endpoint holds in IPAM: none when a delegated IPAM plugin gave them (its CNI DEL releases them). */
function addresses(ep: Endpoint): Array<[Family, string, string | undefined]> {
  const out: Array<[Family, string, string | undefined]> = [];
  if (!addressesFromNodePool(ep.spec)) return out;
  if (ep.ipv4) out.push(['ipv4', ep.ipv4, ep.spec.ipv4ExpirationUUID]);
  if (ep.ipv6) out.push(['ipv6', ep.ipv6, ep.spec.ipv6ExpirationUUID]);
  return out;
}

/** An IPAMError about an endpoint's address as the EndpointError the API answers (409 in use, 400 otherwise), naming the field. */
function asEndpointError(err: unknown, family: Family): unknown {
  if (!(err instanceof IPAMError)) return err;
  const field = `/addressing/${family}`;
  if (err.code === 'in-use') return new EndpointError('exists', err.message, field);
  return new EndpointError('invalid', `invalid endpoint change request: ${err.message}`, field);
}

/** Records the endpoint's addresses with IPAM under `id`; all or nothing (what it did is undone on a failure). */
export function claimEndpointIPs(ipam: IPAM, ep: Endpoint, id: number): void {
  const owner = endpointIPOwner(ep, id);
  const done: string[] = [];
  try {
    for (const [family, ip, expirationUUID] of addresses(ep)) {
      try {
        ipam.useForEndpoint(ip, id, owner, { expirationUUID });
      } catch (err) {
        throw asEndpointError(err, family);
      }
      done.push(ip);
    }
  } catch (err) {
    for (const ip of done) ipam.releaseForEndpoint(ip, id, { keepAdopted: true });
    throw err;
  }
}

/** Gives the endpoint's addresses back: released, except those it took over when `keepAdopted` (NoIPRelease). */
export function releaseEndpointIPs(ipam: IPAM, ep: Endpoint, keepAdopted: boolean): void {
  for (const [, ip] of addresses(ep)) ipam.releaseForEndpoint(ip, ep.id, { keepAdopted });
}
