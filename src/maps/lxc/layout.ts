/** The endpoints map's C layout (bpf/lib/common.h struct lxc_key / lxc_value) as codecs, and its spec (bpf/lib/maps.h). */
import { formatAddr, parseAddr } from '../../lib/addr.js';
import { LXC_MAP } from '../../datapath/map-names.js';
import { MapType, type MapSpec } from '../../bpf/bpf-map.js';
import { hostOrder } from '../../bpf/host-order.js';
import type { Codec } from '../../bpf/typed-map.js';
import { Family, familyOfCode, formatMac, macBytes, readAddr, writeAddr } from '../addr-codec.js';

const { u16, u32 } = hostOrder;

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
    const family = familyOfCode(b[o + 16]!);
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

/** cellium_lxc. */
export const LXC_MAP_SPEC: MapSpec = { name: LXC_MAP, type: MapType.HASH, keySize: 20, valueSize: 16, maxEntries: 65536 };
