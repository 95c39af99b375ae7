/**
 * Drop events from the `cellium_events` ring buffer (struct drop_event in bpf/lib/common.h):
 * decoding, and a non-blocking reader (for `cellium monitor` and tests).
 */
import { join } from 'node:path';
import { formatAddr } from '../cells/ipam/addr.js';
import { BpfMap } from './bpf-map.js';
import { sys } from './errors.js';
import { DROP_REASONS, EVENTS_MAP, hostOrder } from './layout.js';
import { loadAddon, type RawRingReader } from './native.js';

/** Size of struct drop_event. */
export const DROP_EVENT_SIZE = 56;

/** A decoded drop event. */
export interface DropEvent {
  /** Reason name ('policy', 'policy-deny', ...) or `reason-<n>`. */
  readonly reason: string;
  readonly direction: 'ingress' | 'egress';
  readonly endpointId: number;
  readonly protocol: number;
  readonly dport: number;
  readonly srcIdentity: number;
  readonly dstIdentity: number;
  readonly ifIndex: number;
  /** Addresses, absent for packets that did not parse. */
  readonly src?: string;
  readonly dst?: string;
  readonly icmpType: number;
}

/** Decodes one record; undefined when it is not a drop event (type 1) of the right size. */
export function decodeDropEvent(b: Buffer): DropEvent | undefined {
  if (b.length < DROP_EVENT_SIZE || b[0] !== 1) return undefined;
  const family = b[20];
  const addr = (o: number): string | undefined => {
    if (family === 4) return formatAddr('ipv4', BigInt(b.readUInt32BE(o)));
    if (family === 6) return formatAddr('ipv6', (b.readBigUInt64BE(o) << 64n) | b.readBigUInt64BE(o + 8));
    return undefined;
  };
  const src = addr(24);
  const dst = addr(40);
  return {
    reason: DROP_REASONS[b[1]!] ?? `reason-${b[1]}`,
    direction: b[2] ? 'egress' : 'ingress',
    endpointId: hostOrder.u16.read(b, 4),
    protocol: b[3]!,
    dport: b.readUInt16BE(6),
    srcIdentity: hostOrder.u32.read(b, 8),
    dstIdentity: hostOrder.u32.read(b, 12),
    ifIndex: hostOrder.u32.read(b, 16),
    ...(src !== undefined ? { src } : {}),
    ...(dst !== undefined ? { dst } : {}),
    icmpType: b[21]!,
  };
}

/** Reads drop events from `<bpfRoot>/cellium_events` without blocking. */
export class DropEventReader {
  private constructor(private readonly reader: RawRingReader) {}

  /** Opens the pinned ring buffer under the BPF root. */
  static open(bpfRoot: string): DropEventReader {
    const m = BpfMap.openPinned(join(bpfRoot, EVENTS_MAP));
    try {
      const a = loadAddon();
      return new DropEventReader(sys(() => new a.RingReader(m.fd)));
    } finally {
      m.close();
    }
  }

  /** The events available now (possibly none). */
  read(): DropEvent[] {
    const out: DropEvent[] = [];
    for (const rec of sys(() => this.reader.consume())) {
      const e = decodeDropEvent(rec);
      if (e) out.push(e);
    }
    return out;
  }

  /** Closes the reader. */
  close(): void {
    this.reader.close();
  }
}
