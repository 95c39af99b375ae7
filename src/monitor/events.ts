/**
 * Monitor events from the `cellium_events` ring buffer (struct monitor_event in bpf/lib/common.h):
 * drops, traces of forwarded packets and policy verdicts of new connections; their decoding, and a
 * non-blocking reader of the pinned ring (Cilium's pkg/monitor: the layouts the agent decodes).
 */
import { join } from 'node:path';
import { formatAddr } from '../lib/addr.js';
import { BpfMap } from '../bpf/bpf-map.js';
import { sys } from '../bpf/errors.js';
import { DROP_REASONS } from '../maps/metrics/layout.js';
import { EVENTS_MAP } from '../maps/events/layout.js';
import { hostOrder } from '../bpf/host-order.js';
import { loadAddon, type RawRingReader } from '../bpf/native.js';

/** Size of struct monitor_event. */
export const MONITOR_EVENT_SIZE = 64;
/** The first 56 bytes of an event: what a drop event always carried. */
export const DROP_EVENT_SIZE = 56;

/** The event types (EVENT_* in common.h). */
export const EVENT_TYPES = { 1: 'drop', 2: 'trace', 3: 'policy-verdict' } as const;
/** An event's type. */
export type MonitorEventType = (typeof EVENT_TYPES)[keyof typeof EVENT_TYPES];
/** Every event type, in the order `--type` lists them. */
export const MONITOR_EVENT_TYPES: readonly MonitorEventType[] = Object.values(EVENT_TYPES);

/** Conntrack statuses (CT_* in conntrack.h). */
export const CT_STATUSES = ['new', 'established', 'reply', 'related', 'reopened'] as const;
/** A packet's conntrack status. */
export type CtStatusName = (typeof CT_STATUSES)[number];

/** Policy verdict match types (POLICY_MATCH_* in common.h, Cilium's names). */
export const POLICY_MATCH_TYPES = ['none', 'L3-Only', 'L3-L4', 'L4-Only', 'all', 'L3-Proto', 'Proto-Only'] as const;

/** A decoded drop event (the fields every event has). */
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

/** A decoded monitor event of any type. */
export interface MonitorEvent extends DropEvent {
  readonly type: MonitorEventType;
  /** TCP/UDP source port, else 0. */
  readonly sport: number;
  readonly tcpFlags: number;
  /** The packet's conntrack status (trace, policy verdict). */
  readonly ctStatus: CtStatusName;
  /** Policy verdict: the kind of rule that decided. */
  readonly match: string;
  /** Policy verdict: allow or deny. */
  readonly action: 'allow' | 'deny';
  /** The packet's length in bytes. */
  readonly len: number;
}

/** IPv4 addresses as strings, kept by value: a read's events share few addresses (bounded: it starts over when full). */
const ipv4Strings = new Map<number, string>();
const MAX_IPV4_STRINGS = 65536;

function ipv4At(b: Buffer, o: number): string {
  const n = b.readUInt32BE(o);
  let s = ipv4Strings.get(n);
  if (s === undefined) {
    if (ipv4Strings.size >= MAX_IPV4_STRINGS) ipv4Strings.clear();
    ipv4Strings.set(n, (s = formatAddr('ipv4', BigInt(n))));
  }
  return s;
}

function addrAt(b: Buffer, family: number | undefined, o: number): string | undefined {
  if (family === 4) return ipv4At(b, o);
  if (family === 6) return formatAddr('ipv6', (b.readBigUInt64BE(o) << 64n) | b.readBigUInt64BE(o + 8));
  return undefined;
}

/** Decodes one record; undefined when it is not a monitor event of a known type and size. */
export function decodeMonitorEvent(b: Buffer): MonitorEvent | undefined {
  const type = EVENT_TYPES[b[0] as keyof typeof EVENT_TYPES];
  if (b.length < MONITOR_EVENT_SIZE || !type) return undefined;
  const family = b[20];
  const e: { -readonly [K in keyof MonitorEvent]: MonitorEvent[K] } = {
    type,
    reason: type === 'trace' || (type === 'policy-verdict' && b[1] === 0) ? '' : (DROP_REASONS[b[1]!] ?? `reason-${b[1]}`),
    direction: b[2] ? 'egress' : 'ingress',
    endpointId: hostOrder.u16.read(b, 4),
    protocol: b[3]!,
    dport: b.readUInt16BE(6),
    srcIdentity: hostOrder.u32.read(b, 8),
    dstIdentity: hostOrder.u32.read(b, 12),
    ifIndex: hostOrder.u32.read(b, 16),
    icmpType: b[21]!,
    ctStatus: CT_STATUSES[b[22]!] ?? 'new',
    match: POLICY_MATCH_TYPES[b[23]!] ?? `match-${b[23]}`,
    sport: b.readUInt16BE(56),
    tcpFlags: b[58]!,
    action: b[59] ? 'allow' : 'deny',
    len: hostOrder.u32.read(b, 60),
  };
  // both addresses or neither (a packet that did not parse): one shape each, no spread objects
  const src = addrAt(b, family, 24);
  if (src !== undefined) {
    e.src = src;
    e.dst = addrAt(b, family, 40);
  }
  return e;
}

/** Decodes a drop event; undefined for other records. */
export function decodeDropEvent(b: Buffer): DropEvent | undefined {
  const e = decodeMonitorEvent(b);
  return e?.type === 'drop' ? e : undefined;
}

/** Reads monitor events from `<bpfRoot>/cellium_events` without blocking. */
export class MonitorEventReader {
  protected constructor(private readonly reader: RawRingReader) {}

  /** Opens the pinned ring buffer under the BPF root. */
  static open(bpfRoot: string): MonitorEventReader {
    return new MonitorEventReader(openRing(bpfRoot));
  }

  /** The events available now (possibly none); records of unknown types are skipped. */
  read(): MonitorEvent[] {
    const out: MonitorEvent[] = [];
    for (const rec of sys(() => this.reader.consume())) {
      const e = decodeMonitorEvent(rec);
      if (e) out.push(e);
    }
    return out;
  }

  /** Closes the reader. */
  close(): void {
    this.reader.close();
  }
}

/** Reads only the drop events of the ring (tests of the datapath's drops). */
export class DropEventReader {
  private constructor(private readonly reader: MonitorEventReader) {}

  /** Opens the pinned ring buffer under the BPF root. */
  static open(bpfRoot: string): DropEventReader {
    return new DropEventReader(MonitorEventReader.open(bpfRoot));
  }

  /** The drop events available now (other events are consumed and skipped). */
  read(): DropEvent[] {
    return this.reader.read().filter((e) => e.type === 'drop');
  }

  /** Closes the reader. */
  close(): void {
    this.reader.close();
  }
}

function openRing(bpfRoot: string): RawRingReader {
  const m = BpfMap.openPinned(join(bpfRoot, EVENTS_MAP));
  try {
    const a = loadAddon();
    return sys(() => new a.RingReader(m.fd));
  } finally {
    m.close();
  }
}
