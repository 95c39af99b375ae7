/**
 * The C layouts of bpf/lib/common.h as codecs, and the map definitions of bpf/lib/maps.h as specs
 * (creating a map from TypeScript with a spec gives exactly what libbpf would, so the program can
 * reuse it). Host-order integers follow this machine's endianness, like the C structs.
 */
import { formatAddr, formatCidr, parseAddr, parseCidr, type Cidr } from '../lib/addr.js';
import { IPCACHE_MAP, LXC_MAP } from '../datapath/map-names.js';
import {
  POLICY_KEY_SIZE, POLICY_VALUE_SIZE, decodePolicyKey, decodePolicyValue, encodePolicyKey, encodePolicyValue, type PolicyKey,
} from '../datapath/policy-lpm.js';
import { MapFlags, MapType, type MapSpec } from '../bpf/bpf-map.js';
import { hostOrder } from '../bpf/host-order.js';

const { u16, u32 } = hostOrder;
import type { Codec } from '../bpf/typed-map.js';

/** Host-order u16/u32 writers (for .rodata constants and the codecs). */
export { hostOrder };

/** Address family codes in map keys (FAMILY_IPV4 / FAMILY_IPV6). */
export const Family = { ipv4: 4, ipv6: 6 } as const;

/** Writes an address (network order) into 16 bytes at `offset`: IPv4 in the first 4, the rest zero. */
export function writeAddr(family: 'ipv4' | 'ipv6', value: bigint, buf: Buffer, offset: number): void {
  buf.fill(0, offset, offset + 16);
  if (family === 'ipv4') buf.writeUInt32BE(Number(value), offset);
  else {
    buf.writeBigUInt64BE(value >> 64n, offset);
    buf.writeBigUInt64BE(value & 0xffffffffffffffffn, offset + 8);
  }
}

function readAddr(family: 'ipv4' | 'ipv6', buf: Buffer, offset: number): bigint {
  if (family === 'ipv4') return BigInt(buf.readUInt32BE(offset));
  return (buf.readBigUInt64BE(offset) << 64n) | buf.readBigUInt64BE(offset + 8);
}

function familyOf(code: number): 'ipv4' | 'ipv6' {
  if (code === Family.ipv4) return 'ipv4';
  if (code === Family.ipv6) return 'ipv6';
  throw new Error(`unknown address family code ${code} in a map key`);
}

/** Parses a MAC "aa:bb:cc:dd:ee:ff" into 6 bytes (all zero for ""). */
export function macBytes(mac: string): Buffer {
  if (mac === '') return Buffer.alloc(6);
  const parts = mac.split(':');
  if (parts.length !== 6 || parts.some((p) => !/^[0-9a-fA-F]{2}$/.test(p))) throw new Error(`"${mac}" is not a MAC address`);
  return Buffer.from(parts.map((p) => parseInt(p, 16)));
}

/** Formats 6 bytes as "aa:bb:cc:dd:ee:ff". */
export function formatMac(buf: Buffer, offset = 0): string {
  return [...buf.subarray(offset, offset + 6)].map((b) => b.toString(16).padStart(2, '0')).join(':');
}

/** struct policy_key (see policy-lpm.ts). */
export const policyKeyCodec: Codec<PolicyKey> = {
  size: POLICY_KEY_SIZE,
  encode: (k, b, o) => void encodePolicyKey(k, b, o),
  decode: (b, o) => decodePolicyKey(b, o),
};

/** struct policy_value: the deny flag. */
export const policyValueCodec: Codec<boolean> = {
  size: POLICY_VALUE_SIZE,
  encode: (deny, b, o) => void encodePolicyValue(deny, b, o),
  decode: (b, o) => decodePolicyValue(b, o),
};

/** Static prefix bits of an ipcache key (family + pad) before the address. */
export const IPCACHE_STATIC_PREFIX = 32;

/** struct ipcache_key as a CIDR string ("10.0.0.0/8", "fd00::1/128"); decodes canonically. */
export const ipcacheKeyCodec: Codec<string> = {
  size: 24,
  encode: (cidr, b, o) => {
    const c: Cidr = parseCidr(cidr);
    u32.write(b, IPCACHE_STATIC_PREFIX + c.prefix, o);
    b[o + 4] = Family[c.family];
    b.fill(0, o + 5, o + 8);
    writeAddr(c.family, c.network, b, o + 8);
  },
  decode: (b, o) => {
    const family = familyOf(b[o + 4]!);
    const prefix = u32.read(b, o) - IPCACHE_STATIC_PREFIX;
    return formatCidr({ family, network: readAddr(family, b, o + 8), prefix, bits: family === 'ipv4' ? 32 : 128 });
  },
};

/** struct ipcache_value. */
export interface IPCacheValue {
  readonly identity: number;
  readonly flags: number;
}

/** struct ipcache_value codec. */
export const ipcacheValueCodec: Codec<IPCacheValue> = {
  size: 8,
  encode: (v, b, o) => {
    u32.write(b, v.identity, o);
    u32.write(b, v.flags, o + 4);
  },
  decode: (b, o) => ({ identity: u32.read(b, o), flags: u32.read(b, o + 4) }),
};

/** struct lxc_key as an IP address string. */
export const lxcKeyCodec: Codec<string> = {
  size: 20,
  encode: (ip, b, o) => {
    const a = parseAddr(ip);
    if (!a) throw new Error(`"${ip}" is not an IP address`);
    writeAddr(a.family, a.value, b, o);
    b[o + 16] = Family[a.family];
    b.fill(0, o + 17, o + 20);
  },
  decode: (b, o) => {
    const family = familyOf(b[o + 16]!);
    return formatAddr(family, readAddr(family, b, o));
  },
};

/** struct lxc_value. */
export interface LxcValue {
  readonly ifIndex: number;
  readonly identity: number;
  readonly endpointId: number;
  readonly mac: string;
}

/** struct lxc_value codec. */
export const lxcValueCodec: Codec<LxcValue> = {
  size: 16,
  encode: (v, b, o) => {
    u32.write(b, v.ifIndex, o);
    u32.write(b, v.identity, o + 4);
    u16.write(b, v.endpointId, o + 8);
    macBytes(v.mac).copy(b, o + 10);
  },
  decode: (b, o) => ({ ifIndex: u32.read(b, o), identity: u32.read(b, o + 4), endpointId: u16.read(b, o + 8), mac: formatMac(b, o + 10) }),
};

/** Drop reasons: index in cellium_metrics / drop_event.reason -> name. */
export const DROP_REASONS: Readonly<Record<number, string>> = { 1: 'policy', 2: 'policy-deny', 3: 'invalid', 4: 'unsupported-l3', 5: 'ct-insert-failed', 6: 'no-service', 7: 'no-backend', 8: 'invalid-source' };

/** Metrics map name. */
export const METRICS_MAP = 'cellium_metrics';
/** Events ring buffer name. */
export const EVENTS_MAP = 'cellium_events';
/** Name of the per-endpoint policy map inside bpf_lxc.o (bound to cellium_policy_<id> at load). */
export const OBJECT_POLICY_MAP = 'cellium_policy';

/** cellium_policy_<id> (bpf/lib/maps.h cellium_policy). */
export const POLICY_MAP_SPEC: MapSpec = { name: OBJECT_POLICY_MAP, type: MapType.LPM_TRIE, keySize: POLICY_KEY_SIZE, valueSize: POLICY_VALUE_SIZE, maxEntries: 16384, flags: MapFlags.NO_PREALLOC };
/** cellium_ipcache. */
export const IPCACHE_MAP_SPEC: MapSpec = { name: IPCACHE_MAP, type: MapType.LPM_TRIE, keySize: 24, valueSize: 8, maxEntries: 65536, flags: MapFlags.NO_PREALLOC };
/** cellium_lxc. */
export const LXC_MAP_SPEC: MapSpec = { name: LXC_MAP, type: MapType.HASH, keySize: 20, valueSize: 16, maxEntries: 65536 };
/** cellium_metrics slots: direction * METRICS_DIR_STRIDE + drop reason (0: forwarded); METRICS_EVENTS_LOST. */
export const METRICS_DIR_STRIDE = 16;
/** The cellium_metrics slot counting monitor events the ring buffer had no room for. */
export const METRICS_EVENTS_LOST = 15;
/** cellium_metrics (per-CPU {u64 packets; u64 bytes} by direction and drop reason). */
export const METRICS_MAP_SPEC: MapSpec = { name: METRICS_MAP, type: MapType.PERCPU_ARRAY, keySize: 4, valueSize: 16, maxEntries: 2 * METRICS_DIR_STRIDE };
/** cellium_events (the monitor's ring buffer, 256 KiB). */
export const EVENTS_MAP_SPEC: MapSpec = { name: EVENTS_MAP, type: MapType.RINGBUF, keySize: 0, valueSize: 0, maxEntries: 256 * 1024 };
