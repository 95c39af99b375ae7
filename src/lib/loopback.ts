/** Whether a host name or address only reaches this machine, for deciding what may travel unencrypted. */
import { canonicalAddr } from './addr.js';
import { specialRange } from './special-addr.js';

/** `localhost`, or an address in 127.0.0.0/8 or ::1 (`[::1]` too); anything else, names included, is not. */
export function isLoopbackHost(host: string): boolean {
  if (host.toLowerCase() === 'localhost') return true;
  const a = canonicalAddr(host.replace(/^\[(.*)\]$/, '$1'));
  return a !== undefined && specialRange(a)?.use === 'loopback';
}
