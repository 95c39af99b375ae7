/**
 * The shared bpf_lxc's maps (bpf/lib/common.h struct endpoint_info, bpf/lib/maps.h): cellium_endpoints,
 * host interface index -> the endpoint's constants, and cellium_policy_maps, endpoint ID -> its
 * policy map (an array of maps). Codecs and specs.
 */
import { formatAddr, parseAddr } from '../../lib/addr.js';
import { ENDPOINTS_MAP, POLICY_MAPS_MAP } from '../../datapath/map-names.js';
import { MapType, type MapSpec } from '../../bpf/bpf-map.js';
import { hostOrder } from '../../bpf/host-order.js';
import type { Codec } from '../../bpf/typed-map.js';
import { formatMac, macBytes, readAddr, writeAddr } from '../addr-codec.js';
import { POLICY_MAP_SPEC } from '../policy/layout.js';

const { u16, u32 } = hostOrder;

/** Endpoint IDs are 1..4095: one slot each in cellium_policy_maps, at most one entry each in cellium_endpoints. */
export const ENDPOINT_ID_SLOTS = 4096;

/** endpoint_info.flags: the endpoint's Conntrack option is Disabled. */
export const ENDPOINT_F_CT_DISABLED = 0x1;
/** endpoint_info.flags: its ConntrackAccounting option is Disabled. */
export const ENDPOINT_F_NO_ACCOUNTING = 0x2;

/** struct endpoint_info: what the per-endpoint program had as .rodata constants. */
export interface EndpointInfo {
  readonly identity: number;
  readonly endpointId: number;
  readonly flags: number;
  readonly ifIndex: number;
  /** IPv4 address, or '' for none. */
  readonly ipv4: string;
  /** IPv6 address, or '' for none. */
  readonly ipv6: string;
  readonly mac: string;
  readonly hostMac: string;
}

/** Bytes of struct endpoint_info. */
export const ENDPOINT_INFO_SIZE = 44;

function writeIp(ip: string, family: 'ipv4' | 'ipv6', b: Buffer, o: number): void {
  const len = family === 'ipv4' ? 4 : 16;
  b.fill(0, o, o + len);
  if (!ip) return;
  const a = parseAddr(ip);
  if (a?.family !== family) throw new Error(`"${ip}" is not an ${family} address`);
  const full = Buffer.alloc(16);
  writeAddr(family, a.value, full, 0);
  full.copy(b, o, 0, len);
}

function readIp(b: Buffer, o: number, family: 'ipv4' | 'ipv6'): string {
  const len = family === 'ipv4' ? 4 : 16;
  if (b.subarray(o, o + len).every((x) => x === 0)) return '';
  const full = Buffer.alloc(16);
  b.copy(full, 0, o, o + len);
  return formatAddr(family, readAddr(family, full, 0));
}

/** struct endpoint_info codec. */
export const endpointInfoCodec: Codec<EndpointInfo> = {
  size: ENDPOINT_INFO_SIZE,
  encode: (v, b, o) => {
    u32.write(b, v.identity, o);
    u16.write(b, v.endpointId, o + 4);
    b[o + 6] = v.flags;
    b[o + 7] = 0;
    u32.write(b, v.ifIndex, o + 8);
    writeIp(v.ipv4, 'ipv4', b, o + 12);
    writeIp(v.ipv6, 'ipv6', b, o + 16);
    macBytes(v.mac).copy(b, o + 32);
    macBytes(v.hostMac).copy(b, o + 38);
  },
  decode: (b, o) => ({
    identity: u32.read(b, o), endpointId: u16.read(b, o + 4), flags: b[o + 6]!, ifIndex: u32.read(b, o + 8),
    ipv4: readIp(b, o + 12, 'ipv4'), ipv6: readIp(b, o + 16, 'ipv6'), mac: formatMac(b, o + 32), hostMac: formatMac(b, o + 38),
  }),
};

/** Key of cellium_endpoints and cellium_policy_maps: a u32 (interface index / endpoint ID). */
export const u32Codec: Codec<number> = {
  size: 4,
  encode: (v, b, o) => u32.write(b, v, o),
  decode: (b, o) => u32.read(b, o),
};

/** cellium_endpoints. */
export const ENDPOINTS_MAP_SPEC: MapSpec = { name: ENDPOINTS_MAP, type: MapType.HASH, keySize: 4, valueSize: ENDPOINT_INFO_SIZE, maxEntries: ENDPOINT_ID_SLOTS };

/** cellium_policy_maps (its inner maps have the policy map's shape; their size may differ). */
export const POLICY_MAPS_MAP_SPEC: MapSpec = {
  name: POLICY_MAPS_MAP, type: MapType.ARRAY_OF_MAPS, keySize: 4, valueSize: 4, maxEntries: ENDPOINT_ID_SLOTS, inner: POLICY_MAP_SPEC,
};
