/** Parsing and formatting of frontend/backend addresses (`10.0.0.1:80/TCP`, `[fd00::1]:80/UDP`). */
import { canonicalAddr, parseAddr } from '../../lib/addr.js';
import { flat } from '../../lib/flat-string.js';
import type { L3n4Addr, L4Proto, LBScope } from './types.js';

/** The address as a map key and in listings: `10.0.0.1:80/TCP`, `[fd00::1]:80/UDP`, `/i` appended for internal scope. */
export function formatL3n4(a: L3n4Addr): string {
  const host = a.ip.includes(':') ? `[${a.ip}]` : a.ip;
  // a key of many maps (backend IDs, frontends): kept flat
  return flat(`${host}:${a.port}/${PROTO_TEXT[a.protocol] ?? a.protocol.toUpperCase()}${a.scope === 'internal' ? '/i' : ''}`);
}

const PROTO_TEXT: Readonly<Record<string, string>> = { tcp: 'TCP', udp: 'UDP', any: 'ANY' };

/** The family of an address. */
export function isIPv6(ip: string): boolean {
  return ip.includes(':');
}

/** A canonical IP, or undefined when `s` is not one. */
export function canonicalIP(s: string): string | undefined {
  return typeof s === 'string' ? canonicalAddr(s.trim()) : undefined;
}

/** A protocol from user input (`tcp`, `TCP`, `udp`, `any`), undefined when unknown. */
export function parseProto(s: unknown): L4Proto | undefined {
  if (typeof s !== 'string') return undefined;
  const p = s.toLowerCase();
  return p === 'tcp' || p === 'udp' || p === 'any' ? p : undefined;
}

/** Whether a port number is usable (1..65535; 0 only where a wildcard is meant). */
export function validPort(p: unknown, allowZero = false): p is number {
  return Number.isInteger(p) && (p as number) >= (allowZero ? 0 : 1) && (p as number) <= 65535;
}

/**
 * Parses `IP:PORT` (`10.0.0.1:80`, `[fd00::1]:80`); undefined when it is not that. The protocol and
 * scope come from the caller.
 */
export function parseHostPort(s: string, protocol: L4Proto = 'tcp', scope: LBScope = 'external'): L3n4Addr | undefined {
  const m = /^\[([^\]]+)\]:(\d+)$/.exec(s.trim()) ?? /^([^:[\]]+):(\d+)$/.exec(s.trim());
  if (!m) return undefined;
  const ip = canonicalIP(m[1]!);
  const port = Number(m[2]);
  if (!ip || !validPort(port)) return undefined;
  return { ip, port, protocol, scope };
}

/** Whether `s` is an IP address at all. */
export function isIP(s: string): boolean {
  return parseAddr(s) !== undefined;
}
