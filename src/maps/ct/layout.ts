/**
 * The conntrack maps of bpf/lib/common.h and maps.h: names, specs, the key (Cilium's
 * ipv4_ct_tuple / ipv6_ct_tuple) and value (ct_entry) codecs, and Cilium's `bpf ct list` line.
 * A key keeps the addresses in reply orientation and the ports in original orientation: the
 * connection went from daddr:sport to saddr:dport; TUPLE_F_IN marks one opened towards the
 * endpoint (first seen at ingress), none one the endpoint opened.
 */
import { endianness } from 'node:os';
import { formatAddr, parseAddr } from '../../lib/addr.js';
import { CtFlags, TupleFlags, type CtEntry, type CtKey } from '../../datapath/conntrack.js';
import { MapType, type MapSpec } from '../../bpf/bpf-map.js';
import type { Codec } from '../../bpf/typed-map.js';

/** The four global conntrack maps, by family and kind. */
export const CT_MAPS = [
  { name: 'cellium_ct4_global', family: 'ipv4', tcp: true },
  { name: 'cellium_ct_any4_global', family: 'ipv4', tcp: false },
  { name: 'cellium_ct6_global', family: 'ipv6', tcp: true },
  { name: 'cellium_ct_any6_global', family: 'ipv6', tcp: false },
] as const;

/** A conntrack map's name. */
export type CtMapName = (typeof CT_MAPS)[number]['name'];

/** Bytes of ipv4_ct_tuple, ipv6_ct_tuple and ct_entry. */
export const CT_KEY4_SIZE = 14;
export const CT_KEY6_SIZE = 38;
export const CT_ENTRY_SIZE = 56;
/** Offset of ct_entry.lifetime (the garbage collector reads only this). */
export const CT_LIFETIME_OFFSET = 32;

/** Map sizes by kind (--bpf-ct-global-tcp-max, --bpf-ct-global-any-max; Cilium's defaults). */
export interface CtMapSizes {
  readonly tcp: number;
  readonly any: number;
}

/** Cilium's default conntrack map sizes. */
export const DEFAULT_CT_MAP_SIZES: CtMapSizes = { tcp: 524288, any: 262144 };

/** The spec of a conntrack map (LRU hash, preallocated as the kernel requires) at the given sizes. */
export function ctMapSpec(name: CtMapName, sizes: CtMapSizes = DEFAULT_CT_MAP_SIZES): MapSpec {
  const m = CT_MAPS.find((x) => x.name === name)!;
  return {
    name, type: MapType.LRU_HASH, keySize: m.family === 'ipv4' ? CT_KEY4_SIZE : CT_KEY6_SIZE, valueSize: CT_ENTRY_SIZE,
    maxEntries: m.tcp ? sizes.tcp : sizes.any,
  };
}

const LE = endianness() === 'LE';
const u32 = (b: Buffer, o: number): number => (LE ? b.readUInt32LE(o) : b.readUInt32BE(o));
const u16 = (b: Buffer, o: number): number => (LE ? b.readUInt16LE(o) : b.readUInt16BE(o));
const u64 = (b: Buffer, o: number): number => Number(LE ? b.readBigUInt64LE(o) : b.readBigUInt64BE(o));
const w32 = (b: Buffer, v: number, o: number): number => (LE ? b.writeUInt32LE(v >>> 0, o) : b.writeUInt32BE(v >>> 0, o));
const w16 = (b: Buffer, v: number, o: number): number => (LE ? b.writeUInt16LE(v, o) : b.writeUInt16BE(v, o));
const w64 = (b: Buffer, v: number, o: number): number => (LE ? b.writeBigUInt64LE(BigInt(v), o) : b.writeBigUInt64BE(BigInt(v), o));

function addrBytes(family: 'ipv4' | 'ipv6', ip: string, b: Buffer, o: number): void {
  const a = parseAddr(ip);
  if (a?.family !== family) throw new Error(`"${ip}" is not an ${family === 'ipv4' ? 'IPv4' : 'IPv6'} address`);
  if (family === 'ipv4') b.writeUInt32BE(Number(a.value), o);
  else {
    b.writeBigUInt64BE(a.value >> 64n, o);
    b.writeBigUInt64BE(a.value & 0xffffffffffffffffn, o + 8);
  }
}

function addrText(family: 'ipv4' | 'ipv6', b: Buffer, o: number): string {
  if (family === 'ipv4') return formatAddr('ipv4', BigInt(b.readUInt32BE(o)));
  return formatAddr('ipv6', (b.readBigUInt64BE(o) << 64n) | b.readBigUInt64BE(o + 8));
}

function keyCodec(family: 'ipv4' | 'ipv6'): Codec<CtKey> {
  const a = family === 'ipv4' ? 4 : 16;
  return {
    size: family === 'ipv4' ? CT_KEY4_SIZE : CT_KEY6_SIZE,
    encode: (k, b, o) => {
      addrBytes(family, k.daddr, b, o);
      addrBytes(family, k.saddr, b, o + a);
      b.writeUInt16BE(k.dport, o + 2 * a);
      b.writeUInt16BE(k.sport, o + 2 * a + 2);
      b[o + 2 * a + 4] = k.nexthdr;
      b[o + 2 * a + 5] = k.flags;
    },
    decode: (b, o) => ({
      family,
      daddr: addrText(family, b, o),
      saddr: addrText(family, b, o + a),
      dport: b.readUInt16BE(o + 2 * a),
      sport: b.readUInt16BE(o + 2 * a + 2),
      nexthdr: b[o + 2 * a + 4]!,
      flags: b[o + 2 * a + 5]!,
    }),
  };
}

/** struct ipv4_ct_tuple. */
export const ctKey4Codec = keyCodec('ipv4');
/** struct ipv6_ct_tuple. */
export const ctKey6Codec = keyCodec('ipv6');

/** struct ct_entry. */
export const ctEntryCodec: Codec<CtEntry> = {
  size: CT_ENTRY_SIZE,
  encode: (e, b, o) => {
    w64(b, e.rxPackets, o);
    w64(b, e.rxBytes, o + 8);
    w64(b, e.txPackets, o + 16);
    w64(b, e.txBytes, o + 24);
    w32(b, e.lifetime, o + 32);
    w16(b, e.flags, o + 36);
    b.writeUInt16BE(e.revNat, o + 38);
    w16(b, 0, o + 40);
    b[o + 42] = e.txFlagsSeen;
    b[o + 43] = e.rxFlagsSeen;
    w32(b, e.srcSecId, o + 44);
    w32(b, e.lastTxReport, o + 48);
    w32(b, e.lastRxReport, o + 52);
  },
  decode: (b, o) => ({
    rxPackets: u64(b, o),
    rxBytes: u64(b, o + 8),
    txPackets: u64(b, o + 16),
    txBytes: u64(b, o + 24),
    lifetime: u32(b, o + 32),
    flags: u16(b, o + 36),
    revNat: b.readUInt16BE(o + 38),
    txFlagsSeen: b[o + 42]!,
    rxFlagsSeen: b[o + 43]!,
    srcSecId: u32(b, o + 44),
    lastTxReport: u32(b, o + 48),
    lastRxReport: u32(b, o + 52),
  }),
};

/** ct_entry.lifetime of the entry at `offset` in a buffer of entries (no full decode). */
export function ctLifetimeAt(values: Buffer, offset: number): number {
  return u32(values, offset + CT_LIFETIME_OFFSET);
}

const PROTOCOLS: Readonly<Record<number, string>> = { 1: 'ICMP', 6: 'TCP', 17: 'UDP', 58: 'ICMPv6', 132: 'SCTP' };

/** Cilium's protocol name of an IP protocol number (`TCP`, `UDP`, `ICMP`, or the number). */
export function protocolName(nexthdr: number): string {
  return PROTOCOLS[nexthdr] ?? String(nexthdr);
}

const hex = (v: number, digits: number): string => `0x${v.toString(16).padStart(digits, '0')}`;

/** Cilium's `Flags=0x0013 [ RxClosing TxClosing SeenNonSyn ]`. */
export function ctFlagsText(flags: number): string {
  const names = Object.entries(CtFlags).filter(([, bit]) => flags & bit).map(([n]) => n);
  const unknown = flags & ~0x1f;
  return `Flags=${hex(flags, 4)} [ ${[...names, ...(unknown ? [`Unknown=${hex(unknown, 4)}`] : [])].map((x) => `${x} `).join('')}]`;
}

/** The connection a key describes: `TCP OUT 10.0.0.2:42394 -> 10.0.0.3:80` (plus `related`, `service`). */
export function ctKeyText(k: CtKey): string {
  const host = (ip: string): string => (k.family === 'ipv6' ? `[${ip}]` : ip);
  const dir = k.flags & TupleFlags.IN ? 'IN' : 'OUT';
  const extra = `${k.flags & TupleFlags.RELATED ? ' related' : ''}${k.flags & TupleFlags.SERVICE ? ' service' : ''}`;
  return `${protocolName(k.nexthdr)} ${dir} ${host(k.daddr)}:${k.sport} -> ${host(k.saddr)}:${k.dport}${extra}`;
}

/**
 * One line of `cellium bpf ct list global`, Cilium's format: the connection, then
 * `expires=<lifetime> (remaining: N sec(s)) RxPackets=… Flags=… RevNAT=0 SourceSecurityID=…`.
 * `now` is the current CLOCK_MONOTONIC second.
 */
export function ctEntryLine(k: CtKey, e: CtEntry, now: number): string {
  return [
    ctKeyText(k),
    `expires=${e.lifetime} (remaining: ${Math.max(0, e.lifetime - now)} sec(s))`,
    `RxPackets=${e.rxPackets} RxBytes=${e.rxBytes} RxFlagsSeen=${hex(e.rxFlagsSeen, 2)} LastRxReport=${e.lastRxReport}`,
    `TxPackets=${e.txPackets} TxBytes=${e.txBytes} TxFlagsSeen=${hex(e.txFlagsSeen, 2)} LastTxReport=${e.lastTxReport}`,
    ctFlagsText(e.flags),
    `RevNAT=${e.revNat} SourceSecurityID=${e.srcSecId}`,
  ].join(' ');
}

/** CLOCK_MONOTONIC in whole seconds: the clock of ct_entry.lifetime (bpf_ktime_get_ns() / 1e9). */
export function monotonicSeconds(): number {
  return Number(process.hrtime.bigint() / 1_000_000_000n);
}
