/**
 * The conntrack contract both datapaths share (bpf/lib/conntrack.h's shapes): keys and entries,
 * their flags, the lifetimes, what a lookup finds, and the store entries live in (memory or the
 * kernel's maps). The lookups themselves are the model's (src/datapath/model/conntrack.ts); the
 * in-memory store is src/datapath/memory/ct-store.ts, the kernel's src/maps/ct. Keys are Cilium's:
 * addresses in reply orientation, ports in original orientation, TUPLE_F_IN for a connection
 * opened towards the endpoint.
 */
import type { PacketSpec } from './types.js';

/** Conntrack lifetimes in seconds (Cilium's --bpf-ct-timeout-regular-tcp, -any, -tcp-syn, -tcp-fin). */
export interface CtTimeouts {
  readonly tcp: number;
  readonly any: number;
  readonly syn: number;
  readonly close: number;
  /**
   * Monitor aggregation: a flow direction's forwarded packets are traced again only after this
   * many seconds (or on new TCP flags); default {@link DEFAULT_MONITOR_AGGREGATION_S}.
   */
  readonly report?: number;
}

/** Cilium's default monitor aggregation interval (--monitor-aggregation-interval 5s). */
export const DEFAULT_MONITOR_AGGREGATION_S = 5;

/** Cilium's default lifetimes. */
export const DEFAULT_CT_TIMEOUTS: CtTimeouts = { tcp: 8000, any: 60, syn: 60, close: 10, report: DEFAULT_MONITOR_AGGREGATION_S };

/** What a lookup found (Cilium's CT_NEW … CT_REOPENED). */
export type CtStatus = 'new' | 'established' | 'reply' | 'related' | 'reopened';

/** Key flags (TUPLE_F_*). */
export const TupleFlags = { OUT: 0, IN: 1, RELATED: 2, SERVICE: 4 } as const;

/** ct_entry.flags bits (Cilium's positions and names). */
export const CtFlags = { RxClosing: 0x1, TxClosing: 0x2, Nat64: 0x4, LBLoopback: 0x8, SeenNonSyn: 0x10 } as const;

/** TCP header flags. */
export const TcpFlags = { FIN: 0x01, SYN: 0x02, RST: 0x04, PSH: 0x08, ACK: 0x10 } as const;

/** A conntrack key (ports in host order, addresses as text). */
export interface CtKey {
  readonly family: 'ipv4' | 'ipv6';
  /** The reply's destination: the connection's source. */
  readonly daddr: string;
  /** The reply's source: the connection's destination. */
  readonly saddr: string;
  /** The connection's destination port (ICMP echo: 0). */
  readonly dport: number;
  /** The connection's source port (ICMP echo: the identifier). */
  readonly sport: number;
  readonly nexthdr: number;
  readonly flags: number;
}

/** A conntrack entry (struct ct_entry). */
export interface CtEntry {
  rxPackets: number;
  rxBytes: number;
  txPackets: number;
  txBytes: number;
  /** Expiry, in CLOCK_MONOTONIC seconds: the entry is gone once lifetime < now. */
  lifetime: number;
  flags: number;
  revNat: number;
  txFlagsSeen: number;
  rxFlagsSeen: number;
  /** Identity of the side that opened the connection. */
  srcSecId: number;
  lastTxReport: number;
  lastRxReport: number;
}

/** The packet an ICMP error quotes, as its sender sent it. */
export interface InnerPacket {
  readonly src: string;
  readonly dst: string;
  readonly protocol: number;
  readonly sport?: number;
  readonly dport?: number;
  readonly icmpType?: number;
  readonly icmpId?: number;
}

/**
 * What conntrack reads of a packet besides PacketSpec: the source port, TCP flags, ICMP type and
 * echo identifier, whether it is a non-first fragment, an ICMP error's quoted packet, its length.
 */
export interface CtPacketFields {
  readonly sport?: number;
  readonly tcpFlags?: number;
  readonly icmpType?: number;
  readonly icmpId?: number;
  readonly fragment?: boolean;
  readonly inner?: InnerPacket;
  readonly length?: number;
}

/** A packet as conntrack sees it. */
export type CtPacket = PacketSpec & CtPacketFields;

/** Where entries live: memory, or the kernel's maps. */
export interface CtStore {
  get(key: CtKey): CtEntry | undefined;
  /** Writes an entry; false when it could not be written (the kernel's insert failed). */
  set(key: CtKey, entry: CtEntry): boolean;
}

/** The outcome of a lookup: the status, and whether a CT_NEW/CT_REOPENED packet gets an entry once allowed. */
export interface CtLookup {
  readonly status: CtStatus;
  readonly track: boolean;
}
