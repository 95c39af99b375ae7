/**
 * The load-balancing maps of bpf/lib/lb.h with Cilium's layouts: codecs for the keys and values
 * and the map specs. Addresses and ports are in network order, the other integers in host order,
 * as in the C structs.
 */
import { formatAddr, parseAddr, parseIPv4 } from '../../lib/addr.js';
import { LB_MAP_NAMES, type LBAffinityMatchKey, type LBBackendValue, type LBRevNatValue, type LBServiceKey, type LBServiceValue } from '../../datapath/lb-maps.js';
import { MapFlags, MapType, type MapSpec } from '../../bpf/bpf-map.js';
import { hostOrder } from '../../bpf/host-order.js';
import type { Codec } from '../../bpf/typed-map.js';

const { u16, u32 } = hostOrder;

function writeIP(family: 4 | 6, ip: string, b: Buffer, o: number): void {
  if (family === 4) {
    // the common case without a BigInt (every slot key and backend of an IPv4 service)
    const v4 = parseIPv4(ip);
    if (v4 !== undefined) {
      b.writeUInt32BE(v4, o);
      return;
    }
  }
  const a = parseAddr(ip);
  if (!a || (a.family === 'ipv4') !== (family === 4)) throw new Error(`"${ip}" is not an IPv${family} address`);
  if (family === 4) b.writeUInt32BE(Number(a.value), o);
  else {
    b.writeBigUInt64BE(a.value >> 64n, o);
    b.writeBigUInt64BE(a.value & 0xffffffffffffffffn, o + 8);
  }
}

function readIP(family: 4 | 6, b: Buffer, o: number): string {
  if (family === 4) return formatAddr('ipv4', BigInt(b.readUInt32BE(o)));
  return formatAddr('ipv6', (b.readBigUInt64BE(o) << 64n) | b.readBigUInt64BE(o + 8));
}

/** struct lb4_key (12 bytes) / lb6_key (24): address, dport (be), backend_slot, proto, scope, pad[2]. */
export function serviceKeyCodec(family: 4 | 6): Codec<LBServiceKey> {
  const a = family === 4 ? 4 : 16;
  return {
    size: a + 8,
    encode: (k, b, o) => {
      writeIP(family, k.address, b, o);
      b.writeUInt16BE(k.port, o + a);
      u16.write(b, k.slot, o + a + 2);
      b[o + a + 4] = k.proto;
      b[o + a + 5] = k.scope;
      b.fill(0, o + a + 6, o + a + 8);
    },
    decode: (b, o) => ({ address: readIP(family, b, o), port: b.readUInt16BE(o + a), slot: u16.read(b, o + a + 2), proto: b[o + a + 4]!, scope: b[o + a + 5]! }),
  };
}

/** struct lb4_service / lb6_service (12 bytes): backend_id|affinity_timeout, count, rev_nat_index, flags, flags2, qcount. */
export const serviceValueCodec: Codec<LBServiceValue> = {
  size: 12,
  encode: (v, b, o) => {
    u32.write(b, v.backendId, o);
    u16.write(b, v.count, o + 4);
    u16.write(b, v.revNat, o + 6);
    b[o + 8] = v.flags;
    b[o + 9] = v.flags2;
    u16.write(b, v.qcount, o + 10);
  },
  decode: (b, o) => ({ backendId: u32.read(b, o), count: u16.read(b, o + 4), revNat: u16.read(b, o + 6), flags: b[o + 8]!, flags2: b[o + 9]!, qcount: u16.read(b, o + 10) }),
};

/** The backends map key: __u32 backend_id. */
export const backendIdCodec: Codec<number> = { size: 4, encode: (v, b, o) => void u32.write(b, v, o), decode: (b, o) => u32.read(b, o) };

/** struct lb4_backend (12 bytes) / lb6_backend (24): address, port (be), proto, flags, cluster_id, zone, pad. */
export function backendValueCodec(family: 4 | 6): Codec<LBBackendValue> {
  const a = family === 4 ? 4 : 16;
  return {
    size: a + 8,
    encode: (v, b, o) => {
      writeIP(family, v.address, b, o);
      b.writeUInt16BE(v.port, o + a);
      b[o + a + 2] = v.proto;
      b[o + a + 3] = v.flags;
      u16.write(b, v.clusterId, o + a + 4);
      b[o + a + 6] = v.zone;
      b[o + a + 7] = 0;
    },
    decode: (b, o) => ({ address: readIP(family, b, o), port: b.readUInt16BE(o + a), proto: b[o + a + 2]!, flags: b[o + a + 3]!, clusterId: u16.read(b, o + a + 4), zone: b[o + a + 6]! }),
  };
}

/** The reverse-NAT and Maglev key: __u16 rev_nat_index. */
export const revNatIndexCodec: Codec<number> = { size: 2, encode: (v, b, o) => void u16.write(b, v, o), decode: (b, o) => u16.read(b, o) };

/** struct lb4_reverse_nat (8 bytes) / lb6_reverse_nat (20): address, port (be), padding. */
export function revNatValueCodec(family: 4 | 6): Codec<LBRevNatValue> {
  const a = family === 4 ? 4 : 16;
  return {
    size: family === 4 ? 8 : 20,
    encode: (v, b, o) => {
      writeIP(family, v.address, b, o);
      b.writeUInt16BE(v.port, o + a);
      b.fill(0, o + a + 2, o + (family === 4 ? 8 : 20));
    },
    decode: (b, o) => ({ address: readIP(family, b, o), port: b.readUInt16BE(o + a) }),
  };
}

/** A Maglev table value: __u32 backend_ids[M]. */
export function maglevValueCodec(m: number): Codec<Uint32Array> {
  return {
    size: 4 * m,
    encode: (v, b, o) => {
      for (let i = 0; i < m; i++) u32.write(b, v[i] ?? 0, o + 4 * i);
    },
    decode: (b, o) => {
      const t = new Uint32Array(m);
      for (let i = 0; i < m; i++) t[i] = u32.read(b, o + 4 * i);
      return t;
    },
  };
}

/** struct lb_affinity_match (8 bytes, packed): backend_id, rev_nat_id, pad. */
export const affinityMatchKeyCodec: Codec<LBAffinityMatchKey> = {
  size: 8,
  encode: (k, b, o) => {
    u32.write(b, k.backendId, o);
    u16.write(b, k.revNat, o + 4);
    u16.write(b, 0, o + 6);
  },
  decode: (b, o) => ({ backendId: u32.read(b, o), revNat: u16.read(b, o + 4) }),
};

/** The affinity match value: __u8. */
export const u8Codec: Codec<number> = { size: 1, encode: (v, b, o) => void (b[o] = v), decode: (b, o) => b[o]! };

/** Bytes of struct lb4_affinity_key (packed). */
/** The Maglev table size bpf_lxc is compiled with (LB_MAGLEV_LUT_SIZE in bpf/lib/lb_maps.h): the only one its lookups can read. */
export const BPF_MAGLEV_TABLE_SIZE = 16381;

/**
 * The source address bpf_lxc gives a pod's connection to a service whose chosen backend is the pod
 * itself (hairpin), by family: LB_LOOPBACK_IPV4 / LB_LOOPBACK_IPV6 of bpf/lib/common.h (Cilium's
 * 169.254.42.1; for IPv6 a global-scope address, see docs/cells/loadbalancer.md, Hairpin).
 */
export const SERVICE_LOOPBACK = { ipv4: '169.254.42.1', ipv6: '64:ff9b:1::a9fe:2a01' } as const;

export const AFFINITY_KEY4_SIZE = 16;
/** Bytes of struct lb6_affinity_key (packed). */
export const AFFINITY_KEY6_SIZE = 24;
/** Bytes of struct lb_affinity_val (packed). */
export const AFFINITY_VALUE_SIZE = 16;

/** The map specs at `max` entries (--bpf-lb-map-max) and Maglev tables of `maglevSize` slots. */
export function lbMapSpecs(max: number, maglevSize: number): Readonly<Record<keyof typeof LB_MAP_NAMES, MapSpec>> {
  // hash maps are not preallocated (Cilium's default, --preallocate-bpf-maps=false)
  const hash = (name: string, keySize: number, valueSize: number): MapSpec => ({ name, type: MapType.HASH, keySize, valueSize, maxEntries: max, flags: MapFlags.NO_PREALLOC });
  return {
    services4: hash(LB_MAP_NAMES.services4, 12, 12),
    services6: hash(LB_MAP_NAMES.services6, 24, 12),
    backends4: hash(LB_MAP_NAMES.backends4, 4, 12),
    backends6: hash(LB_MAP_NAMES.backends6, 4, 24),
    revNat4: hash(LB_MAP_NAMES.revNat4, 2, 8),
    revNat6: hash(LB_MAP_NAMES.revNat6, 2, 20),
    // one table per service: Cilium uses a hash of maps; here one hash whose value is the table,
    // not preallocated (a table is 4 * M bytes)
    maglev4: hash(LB_MAP_NAMES.maglev4, 2, 4 * maglevSize),
    maglev6: hash(LB_MAP_NAMES.maglev6, 2, 4 * maglevSize),
    affinity4: { name: LB_MAP_NAMES.affinity4, type: MapType.LRU_HASH, keySize: AFFINITY_KEY4_SIZE, valueSize: AFFINITY_VALUE_SIZE, maxEntries: max },
    affinity6: { name: LB_MAP_NAMES.affinity6, type: MapType.LRU_HASH, keySize: AFFINITY_KEY6_SIZE, valueSize: AFFINITY_VALUE_SIZE, maxEntries: max },
    affinityMatch: hash(LB_MAP_NAMES.affinityMatch, 8, 1),
  };
}
