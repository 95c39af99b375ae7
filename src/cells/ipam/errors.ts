/** Errors of the IPAM cell, each with a code the API maps to a status and a message naming the fix. */
import type { Family } from './types.js';

/** What went wrong: the API maps `invalid`/`outside-pool`/`reserved` to 400, `in-use` to 409, `no-pool` to 501, `exhausted` to 502. */
export type IPAMErrorCode = 'invalid' | 'no-pool' | 'outside-pool' | 'exhausted' | 'in-use' | 'reserved';

/** An IPAM error; `ip` is the address concerned, when there is one. */
export class IPAMError extends Error {
  override readonly name = 'IPAMError';
  constructor(
    readonly code: IPAMErrorCode,
    message: string,
    readonly ip?: string,
  ) {
    super(message);
  }
}

/** `ip` is not an IPv4 or IPv6 address. */
export function invalidIP(ip: string): IPAMError {
  return new IPAMError('invalid', `"${ip}" is not an IP address: give an IPv4 (10.200.0.5) or IPv6 (fd00::5) address`, ip);
}

/** No pool is configured for the family. */
export function noPool(family: Family): IPAMError {
  const flag = family === 'ipv4' ? '--ipv4-range' : '--ipv6-range';
  return new IPAMError('no-pool', `no ${family} pool is configured: set ${flag} (e.g. ${family === 'ipv4' ? '10.200.0.0/16' : 'fd00:10:200::/112'})`);
}

/** The IP lies outside the family's pool. */
export function outsidePool(ip: string, cidr: string, family: Family): IPAMError {
  const flag = family === 'ipv4' ? '--ipv4-range' : '--ipv6-range';
  return new IPAMError('outside-pool', `${ip} is outside the ${family} pool ${cidr}: pick an address inside it or widen ${flag}`, ip);
}

/** Every usable address of the pool is allocated. */
export function exhausted(family: Family, cidr: string, usable: bigint): IPAMError {
  const flag = family === 'ipv4' ? '--ipv4-range' : '--ipv6-range';
  return new IPAMError('exhausted', `${family} pool ${cidr} is exhausted (${usable} usable addresses all allocated): release addresses or widen ${flag}`);
}

/** The IP is already allocated to someone (and used by endpoint `endpointId`, when one does). */
export function inUse(ip: string, owner: string, endpointId?: number): IPAMError {
  if (endpointId !== undefined) {
    return new IPAMError('in-use', `${ip} is in use by endpoint ${endpointId} (owner "${owner}"): delete that endpoint first (it releases its addresses) or use another address`, ip);
  }
  return new IPAMError('in-use', `${ip} is already allocated to owner "${owner}": release it first or allocate another address`, ip);
}

/** The endpoint's expiration UUID names another allocation of the IP than the current one. */
export function otherAllocation(ip: string, owner: string): IPAMError {
  return new IPAMError(
    'in-use',
    `${ip} is allocated to owner "${owner}" under another expiration UUID than the endpoint's: the allocation the endpoint was given expired and the address was handed out again; allocate a new address`,
    ip,
  );
}

/** An expiring allocation (in flight for one endpoint) taken over without its expiration UUID. */
export function inFlight(ip: string, owner: string): IPAMError {
  return new IPAMError(
    'in-use',
    `${ip} is allocated to owner "${owner}" and expires unless the endpoint it was allocated for takes it over: give its expiration UUID (addressing ipv4-/ipv6-expiration-uuid) or use another address`,
    ip,
  );
}

/** The IP is the pool's network, gateway or broadcast address, which is never allocated. */
export function reservedAddr(ip: string, what: string, cidr: string): IPAMError {
  return new IPAMError('reserved', `${ip} is the ${what} address of pool ${cidr} and is never allocated: pick another address`, ip);
}

/** A pool range that cannot be used; thrown while parsing `--ipv4-range`/`--ipv6-range`. */
export function badRange(flag: string, raw: string, why: string): Error {
  return new Error(`invalid --${flag} "${raw}": ${why}`);
}
