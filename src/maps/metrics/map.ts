/** Reading cellium_metrics: drops by reason and direction, forwards, monitor events lost (summed over CPUs). */
import { endianness } from 'node:os';
import { join } from 'node:path';
import { BpfMap } from '../../bpf/bpf-map.js';
import { hostOrder } from '../../bpf/host-order.js';
import { DROP_REASONS, METRICS_DIR_STRIDE, METRICS_EVENTS_LOST, METRICS_MAP, METRICS_MAP_SPEC } from './layout.js';

const LE = endianness() === 'LE';
const readU64 = (b: Buffer, o: number): bigint => (LE ? b.readBigUInt64LE(o) : b.readBigUInt64BE(o));

/** Packets and bytes of one cellium_metrics slot, summed over CPUs. */
export interface TrafficCounter {
  readonly direction: 'ingress' | 'egress';
  /** The drop reason; absent for forwarded packets. */
  readonly reason?: string;
  readonly packets: number;
  readonly bytes: number;
}

/** What cellium_metrics holds: drops by reason and direction, forwards by direction, monitor events lost. */
export interface TrafficCounters {
  readonly drops: TrafficCounter[];
  readonly forwarded: TrafficCounter[];
  readonly eventsLost: number;
}

/** Reads every slot of an open cellium_metrics map. */
export function readTraffic(m: BpfMap): TrafficCounters {
  const key = Buffer.alloc(4);
  const value = Buffer.alloc(m.valueBytes);
  const slot = (idx: number): { packets: number; bytes: number } => {
    hostOrder.u32.write(key, idx, 0);
    let packets = 0n;
    let bytes = 0n;
    if (m.lookup(key, value)) {
      for (let o = 0; o < value.length; o += 16) {
        packets += readU64(value, o);
        bytes += readU64(value, o + 8);
      }
    }
    return { packets: Number(packets), bytes: Number(bytes) };
  };
  const out: TrafficCounters = { drops: [], forwarded: [], eventsLost: slot(METRICS_EVENTS_LOST).packets };
  for (const [dir, direction] of [[0, 'ingress'], [1, 'egress']] as const) {
    out.forwarded.push({ direction, ...slot(dir * METRICS_DIR_STRIDE) });
    for (const [idx, reason] of Object.entries(DROP_REASONS)) out.drops.push({ direction, reason, ...slot(dir * METRICS_DIR_STRIDE + Number(idx)) });
  }
  return out;
}

/** Drop counters by reason name (both directions), summed over CPUs, from cellium_metrics under the BPF root. */
export function readDropCounters(bpfRoot: string): Record<string, { packets: number; bytes: number }> {
  const m = BpfMap.openOrCreate(join(bpfRoot, METRICS_MAP), METRICS_MAP_SPEC);
  try {
    const out: Record<string, { packets: number; bytes: number }> = {};
    for (const d of readTraffic(m).drops) {
      const cur = out[d.reason!] ?? { packets: 0, bytes: 0 };
      out[d.reason!] = { packets: cur.packets + d.packets, bytes: cur.bytes + d.bytes };
    }
    return out;
  } finally {
    m.close();
  }
}
