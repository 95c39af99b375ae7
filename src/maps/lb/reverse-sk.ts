/**
 * The reverse-socket maps of socket-level load balancing (bpf/bpf_sock.c; Cilium's
 * cilium_lb4_reverse_sk / cilium_lb6_reverse_sk): per socket cookie and backend address:port, the
 * frontend a connect or sendmsg was translated from and its rev-NAT index. LRU: only the programs
 * write them; the agent creates them at --bpf-sock-rev-map-max and reads them for listings.
 */
import { join } from 'node:path';
import { endianness } from 'node:os';
import { formatAddr } from '../../lib/addr.js';
import { BpfMap, MapType, type MapSpec } from '../../bpf/bpf-map.js';
import { hostOrder } from '../../bpf/host-order.js';
import { openExact, type MapReplacement } from '../ct/maps.js';

/** The map names. */
export const REVERSE_SK_MAP_NAMES = { reverseSk4: 'cellium_lb4_reverse_sk', reverseSk6: 'cellium_lb6_reverse_sk' } as const;

/** struct lb4_reverse_sk_key (16 bytes) / lb6_reverse_sk_key (32), struct lb4_reverse_sk (8) / lb6_reverse_sk (20). */
export const REVERSE_SK_SIZES = { key4: 16, value4: 8, key6: 32, value6: 20 } as const;

/** The specs at `max` entries. */
export function reverseSkMapSpecs(max: number): Readonly<Record<keyof typeof REVERSE_SK_MAP_NAMES, MapSpec>> {
  return {
    reverseSk4: { name: REVERSE_SK_MAP_NAMES.reverseSk4, type: MapType.LRU_HASH, keySize: REVERSE_SK_SIZES.key4, valueSize: REVERSE_SK_SIZES.value4, maxEntries: max },
    reverseSk6: { name: REVERSE_SK_MAP_NAMES.reverseSk6, type: MapType.LRU_HASH, keySize: REVERSE_SK_SIZES.key6, valueSize: REVERSE_SK_SIZES.value6, maxEntries: max },
  };
}

/** One entry: the socket, the backend it was sent to, the frontend it was meant for. */
export interface ReverseSkEntry {
  readonly cookie: bigint;
  readonly backend: string;
  readonly backendPort: number;
  readonly frontend: string;
  readonly frontendPort: number;
  readonly revNat: number;
}

/** Opens (or creates) both maps under `bpfRoot` at `max` entries; a pinned one of another layout is replaced. */
export function openReverseSkMaps(bpfRoot: string, max: number, onReplace?: (r: MapReplacement) => void): { reverseSk4: BpfMap; reverseSk6: BpfMap } {
  const specs = reverseSkMapSpecs(max);
  const m4 = openExact(join(bpfRoot, specs.reverseSk4.name), specs.reverseSk4, onReplace);
  try {
    return { reverseSk4: m4, reverseSk6: openExact(join(bpfRoot, specs.reverseSk6.name), specs.reverseSk6, onReplace) };
  } catch (err) {
    m4.close();
    throw err;
  }
}

function ip(family: 4 | 6, b: Buffer, o: number): string {
  if (family === 4) return formatAddr('ipv4', BigInt(b.readUInt32BE(o)));
  return formatAddr('ipv6', (b.readBigUInt64BE(o) << 64n) | b.readBigUInt64BE(o + 8));
}

/** The entries of a reverse-socket map of `family`. */
export function reverseSkEntries(map: BpfMap, family: 4 | 6): ReverseSkEntry[] {
  const a = family === 4 ? 4 : 16;
  const out: ReverseSkEntry[] = [];
  for (const k of map.keys()) {
    const v = map.lookup(k);
    if (!v) continue;
    out.push({
      cookie: endianness() === 'LE' ? k.readBigUInt64LE(0) : k.readBigUInt64BE(0),
      backend: ip(family, k, 8), backendPort: k.readUInt16BE(8 + a),
      frontend: ip(family, v, 0), frontendPort: v.readUInt16BE(a), revNat: hostOrder.u16.read(v, a + 2),
    });
  }
  return out;
}
