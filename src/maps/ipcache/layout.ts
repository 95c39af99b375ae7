/** The ipcache's C layout (bpf/lib/common.h struct ipcache_key / ipcache_value) as codecs, and its spec (bpf/lib/maps.h). */
import { formatCidr, parseCidr, type Cidr } from '../../lib/addr.js';
import { IPCACHE_MAP } from '../../datapath/map-names.js';
import { MapFlags, MapType, type MapSpec } from '../../bpf/bpf-map.js';
import { hostOrder } from '../../bpf/host-order.js';
import type { Codec } from '../../bpf/typed-map.js';
import { Family, familyOfCode, readAddr, writeAddr } from '../addr-codec.js';

const { u32 } = hostOrder;

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
    const family = familyOfCode(b[o + 4]!);
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

/** cellium_ipcache. */
export const IPCACHE_MAP_SPEC: MapSpec = { name: IPCACHE_MAP, type: MapType.LPM_TRIE, keySize: 24, valueSize: 8, maxEntries: 65536, flags: MapFlags.NO_PREALLOC };
