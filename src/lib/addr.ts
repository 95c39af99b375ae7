/**
 * IP addresses and CIDRs as bigints, for both families: parsing, canonical formatting (RFC 5952
 * for IPv6) and containment. Shared by IPAM (pools) and policy (fromCIDR/toCIDR, CIDR identities).
 */
import { isIPv6 } from 'node:net';

/** An address family. */
export type Family = 'ipv4' | 'ipv6';

/** A parsed address. */
export interface Addr {
  readonly family: Family;
  readonly value: bigint;
}

/** A parsed CIDR; `network` has every host bit cleared. */
export interface Cidr {
  readonly family: Family;
  readonly network: bigint;
  readonly prefix: number;
  /** 32 or 128. */
  readonly bits: number;
}

/** Address width in bits of a family. */
export function familyBits(family: Family): number {
  return family === 'ipv4' ? 32 : 128;
}

/**
 * A dotted-quad IPv4 address as a number (0..2^32-1), or undefined when `s` is not one. Accepts
 * exactly what node:net's isIPv4 accepts (four decimal octets 0..255, no leading zeros, nothing
 * else), so an accepted text is also the canonical form of its address. One pass over the
 * characters: no regular expression, no BigInt, no garbage (the LB reconciler parses every
 * frontend and backend address with it).
 */
export function parseIPv4(s: string): number | undefined {
  const n = s.length;
  if (n < 7 || n > 15) return undefined;
  let value = 0;
  let octet = 0;
  let digits = 0;
  let dots = 0;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c === 46) {
      if (digits === 0 || dots === 3) return undefined;
      value = value * 256 + octet;
      octet = 0;
      digits = 0;
      dots++;
      continue;
    }
    const d = c - 48;
    if (d < 0 || d > 9 || (digits === 1 && octet === 0)) return undefined;
    octet = octet * 10 + d;
    if (octet > 255) return undefined;
    digits++;
  }
  if (digits === 0 || dots !== 3) return undefined;
  return value * 256 + octet;
}

function parseV4(s: string): bigint {
  return BigInt(parseIPv4(s)!);
}

function parseV6(s: string): bigint {
  let text = s;
  if (text.includes('.')) {
    // embedded IPv4 in the last 32 bits (::ffff:1.2.3.4): rewrite it as two hex groups
    const lastColon = text.lastIndexOf(':');
    const v4 = parseV4(text.slice(lastColon + 1));
    text = `${text.slice(0, lastColon + 1)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  const halves = text.split('::');
  const groupsOf = (part: string | undefined): bigint[] => (part ? part.split(':').map((h) => BigInt(`0x${h}`)) : []);
  const head = groupsOf(halves[0]);
  const rest = groupsOf(halves[1]);
  const zeros = halves.length === 2 ? 8 - head.length - rest.length : 0;
  return [...head, ...new Array<bigint>(zeros).fill(0n), ...rest].reduce((acc, g) => (acc << 16n) | g, 0n);
}

/** Parses an IPv4 or IPv6 address; undefined when `s` is not one. */
export function parseAddr(s: string): Addr | undefined {
  const v4 = parseIPv4(s);
  if (v4 !== undefined) return { family: 'ipv4', value: BigInt(v4) };
  if (isIPv6(s) && !s.includes('%')) return { family: 'ipv6', value: parseV6(s) };
  return undefined;
}

/** Formats an address canonically (dotted quad; RFC 5952 compressed IPv6). */
export function formatAddr(family: Family, value: bigint): string {
  if (family === 'ipv4') {
    const n = Number(value & 0xffffffffn);
    return `${Math.floor(n / 16777216)}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
  }
  const groups: number[] = [];
  for (let i = 7; i >= 0; i--) groups.push(Number((value >> BigInt(i * 16)) & 0xffffn));
  let bestStart = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) { i++; continue; }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen) { bestStart = i; bestLen = j - i; }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestStart < 0) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLen).join(':')}`;
}

/** The canonical form of an address string, or undefined when it is not an address. */
export function canonicalAddr(s: string): string | undefined {
  // a dotted quad parseIPv4 accepts is canonical as written
  if (parseIPv4(s) !== undefined) return s;
  const a = parseAddr(s);
  return a && formatAddr(a.family, a.value);
}

/** Parses `addr/prefix` (host bits are cleared); a bare address is a host CIDR. Throws a plain Error. */
export function parseCidr(s: string): Cidr {
  const slash = s.indexOf('/');
  const addrText = slash < 0 ? s : s.slice(0, slash);
  const addr = parseAddr(addrText.trim());
  if (!addr) throw new Error(`"${s}" is not a CIDR: expected an address/prefix such as 10.0.0.0/8 or fd00::/64`);
  const bits = familyBits(addr.family);
  const prefixText = slash < 0 ? String(bits) : s.slice(slash + 1).trim();
  const prefix = /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : NaN;
  if (!(prefix >= 0 && prefix <= bits)) throw new Error(`"${s}" has an invalid prefix length: expected 0..${bits}`);
  return { family: addr.family, network: addr.value & prefixMask(bits, prefix), prefix, bits };
}

/** The netmask of a prefix as a bigint. */
export function prefixMask(bits: number, prefix: number): bigint {
  const all = (1n << BigInt(bits)) - 1n;
  return prefix === 0 ? 0n : all ^ ((1n << BigInt(bits - prefix)) - 1n);
}

/** Renders a CIDR canonically (`10.0.0.0/8`). */
export function formatCidr(c: Cidr): string {
  return `${formatAddr(c.family, c.network)}/${c.prefix}`;
}

/** Number of addresses in a CIDR. */
export function cidrSize(c: Cidr): bigint {
  return 1n << BigInt(c.bits - c.prefix);
}

/** Whether an address lies inside a CIDR. */
export function cidrContainsAddr(c: Cidr, a: Addr): boolean {
  return c.family === a.family && (a.value & prefixMask(c.bits, c.prefix)) === c.network;
}

/** Whether `inner` lies completely inside `outer` (equal CIDRs included). */
export function cidrContains(outer: Cidr, inner: Cidr): boolean {
  return outer.family === inner.family && inner.prefix >= outer.prefix && (inner.network & prefixMask(outer.bits, outer.prefix)) === outer.network;
}

/** The host CIDR of an address: `/32` for IPv4, `/128` for IPv6 (the one place this is decided). */
export function hostCidr(ip: string): string {
  return `${ip}/${ip.includes(':') ? 128 : 32}`;
}
