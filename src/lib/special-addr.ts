/**
 * The special-purpose address ranges (RFC 6890) that matter to a node agent: which ones an
 * address falls in, and why, so each cell can decide what it refuses (an endpoint every one of
 * them; a service frontend all but link-local; a backend all but loopback and link-local).
 */
import { parseAddr, parseCidr, parseIPv4, prefixMask, type Cidr } from './addr.js';

/** The kinds of special-purpose ranges. */
export type SpecialUse = 'unspecified' | 'loopback' | 'link-local' | 'multicast' | 'reserved';

/** A special-purpose range an address is in. */
export interface SpecialRange {
  readonly use: SpecialUse;
  /** The range as text (`127.0.0.0/8`). */
  readonly cidr: string;
  /** For messages: `a loopback address`. */
  readonly what: string;
}

const RANGES: ReadonlyArray<SpecialRange & { readonly parsed: Cidr; readonly mask: bigint; readonly v4?: { readonly network: number; readonly mask: number } }> = ([
  ['unspecified', '0.0.0.0/8', 'an unspecified ("this network") address'],
  ['loopback', '127.0.0.0/8', 'a loopback address'],
  ['link-local', '169.254.0.0/16', 'a link-local address'],
  ['multicast', '224.0.0.0/4', 'a multicast address'],
  ['reserved', '240.0.0.0/4', 'a reserved (class E) or the broadcast address'],
  ['unspecified', '::/128', 'the unspecified address'],
  ['loopback', '::1/128', 'the loopback address'],
  ['link-local', 'fe80::/10', 'a link-local address'],
  ['multicast', 'ff00::/8', 'a multicast address'],
] as const).map(([use, cidr, what]) => {
  const parsed = parseCidr(cidr);
  const mask = prefixMask(parsed.bits, parsed.prefix);
  // IPv4 ranges are also kept as numbers: the common (IPv4) check then needs no BigInt
  const v4 = parsed.family === 'ipv4' ? { network: Number(parsed.network), mask: Number(mask) } : undefined;
  return { use, cidr, what, parsed, mask, ...(v4 ? { v4 } : {}) };
});

/** The special-purpose range address `ip` is in, or undefined (also for text that is no address). */
export function specialRange(ip: string): SpecialRange | undefined {
  const r = findRange(ip);
  return r && { use: r.use, cidr: r.cidr, what: r.what };
}

function findRange(ip: string): (typeof RANGES)[number] | undefined {
  const n = parseIPv4(ip);
  if (n !== undefined) return RANGES.find((x) => x.v4 !== undefined && ((n & x.v4.mask) >>> 0) === x.v4.network);
  const a = parseAddr(ip);
  return a && RANGES.find((x) => x.parsed.family === a.family && (a.value & x.mask) === x.parsed.network);
}

/** `it is a loopback address (127.0.0.0/8)` when `ip` is in a range whose use is not in `allowed`; else undefined. */
export function whySpecial(ip: string, allowed: readonly SpecialUse[] = []): string | undefined {
  const r = findRange(ip);
  return r && !allowed.includes(r.use) ? `it is ${r.what} (${r.cidr})` : undefined;
}
