/**
 * Connection tracking exactly as bpf/lib/conntrack.h does it (pure TypeScript over a CtStore):
 * the memory datapath keeps its table in memory, the BPF datapath's verdicts read the kernel's
 * maps through the same lookups. See docs/datapath.md for the semantics:
 *   - a packet is looked up as a reply (CT_REPLY, or CT_RELATED for an ICMP error about a
 *     tracked connection) and as the forward direction (CT_ESTABLISHED, or CT_REOPENED for a pure
 *     SYN on a closing entry), the forward key first when the sender's port is the higher one
 *     (ct_forward_first; a pure SYN only as the forward direction), else it is CT_NEW; an expired
 *     entry (lifetime < now) is absent;
 *   - TCP entries stay on the SYN lifetime until a packet without SYN is seen, FIN closes its
 *     direction, RST both, and both closed moves the entry to the close lifetime;
 *   - lifetimes are whole seconds of CLOCK_MONOTONIC (the clock is injectable).
 * Keys are Cilium's: addresses in reply orientation, ports in original orientation, TUPLE_F_IN for
 * a connection opened towards the endpoint.
 */
import { parseAddr } from '../../lib/addr.js';
import { CtFlags, DEFAULT_CT_TIMEOUTS, TcpFlags, TupleFlags, type CtEntry, type CtKey, type CtLookup, type CtPacket, type CtStore, type CtTimeouts } from '../conntrack.js';
import { Proto, type Direction } from '../types.js';

const CLOSING = CtFlags.RxClosing | CtFlags.TxClosing;

function isEchoRequest(protocol: number, type: number): boolean {
  return (protocol === Proto.ICMP && type === 8) || (protocol === Proto.ICMPV6 && type === 128);
}

function isEchoReply(protocol: number, type: number): boolean {
  return (protocol === Proto.ICMP && type === 0) || (protocol === Proto.ICMPV6 && type === 129);
}

/** Whether an ICMP(v6) type is an error about another packet (unreachable, too big, time exceeded, parameter problem). */
export function isIcmpError(protocol: number, type: number): boolean {
  if (protocol === Proto.ICMP) return type === 3 || type === 11 || type === 12;
  if (protocol === Proto.ICMPV6) return type >= 1 && type <= 4;
  return false;
}

/** The ICMP type of a packet (default: echo request). */
export function icmpTypeOf(p: { readonly protocol: number; readonly icmpType?: number }): number {
  return p.icmpType ?? (p.protocol === Proto.ICMPV6 ? 128 : 8);
}

/** Conntrack ports [sport, dport] as bpf_lxc reads them: L4 ports, or the echo identifier (request: sport, reply: dport). */
export function ctPorts(p: { readonly protocol: number; readonly sport?: number; readonly dport?: number; readonly icmpType?: number; readonly icmpId?: number }): [number, number] {
  if (p.protocol === Proto.TCP || p.protocol === Proto.UDP || p.protocol === Proto.SCTP) return [p.sport ?? 0, p.dport ?? 0];
  if (p.protocol === Proto.ICMP || p.protocol === Proto.ICMPV6) {
    const type = icmpTypeOf(p);
    if (isEchoRequest(p.protocol, type)) return [p.icmpId ?? 0, 0];
    if (isEchoReply(p.protocol, type)) return [0, p.icmpId ?? 0];
  }
  return [0, 0];
}

function familyOf(ip: string): 'ipv4' | 'ipv6' {
  const a = parseAddr(ip);
  if (!a) throw new Error(`"${ip}" is not an IP address`);
  return a.family;
}

/** The key a packet from src to dst looks itself up with as a reply (ports swapped, `flags` the would-be opener). */
function replyKey(src: string, dst: string, sport: number, dport: number, nexthdr: number, flags: number): CtKey {
  return { family: familyOf(src), daddr: dst, saddr: src, dport: sport, sport: dport, nexthdr, flags };
}

/** The other direction's key. */
export function reverseKey(k: CtKey): CtKey {
  return { ...k, daddr: k.saddr, saddr: k.daddr, dport: k.sport, sport: k.dport, flags: k.flags ^ TupleFlags.IN };
}

/** The key a new connection's entry is written under (what the forward lookup finds). */
export function forwardKey(direction: Direction, p: CtPacket): CtKey {
  const [sport, dport] = ctPorts(p);
  return reverseKey(replyKey(p.src, p.dst, sport, dport, p.protocol, direction === 'egress' ? TupleFlags.IN : TupleFlags.OUT));
}

/** A stable text id of a key (the memory store's map key). */
export function ctKeyId(k: CtKey): string {
  return `${k.family}|${k.daddr}|${k.saddr}|${k.dport}|${k.sport}|${k.nexthdr}|${k.flags}`;
}

/** Conntrack over a store: lookups, refreshes and creations as bpf_lxc performs them. */
export class Conntrack {
  constructor(
    private readonly store: CtStore,
    private readonly timeouts: CtTimeouts = DEFAULT_CT_TIMEOUTS,
    /** CLOCK_MONOTONIC in seconds (fractions are cut, like bpf_ktime_get_ns() / 1e9). */
    private readonly clock: () => number,
    private readonly reportInterval = 5,
  ) {}

  /** The current whole second. */
  now(): number {
    return Math.floor(this.clock());
  }

  private find(k: CtKey, now: number): CtEntry | undefined {
    const e = this.store.get(k);
    return e && e.lifetime >= now ? e : undefined;
  }

  /**
   * ct_lookup: the status of a packet travelling in `direction` of an endpoint. With `refresh`
   * (a packet passing), a matched entry is updated; without (a verdict question), nothing changes.
   */
  lookup(direction: Direction, p: CtPacket, refresh = true): CtLookup {
    if (p.fragment) return { status: 'new', track: false };
    const egress = direction === 'egress';
    const now = this.now();
    if (isIcmpError(p.protocol, icmpTypeOf(p))) return { status: p.inner && this.related(egress, p, now) ? 'related' : 'new', track: false };
    return this.match(this.order(egress, p), egress, p, now, refresh);
  }

  /**
   * ct_lookup_first: the first key of the lookup's order alone (bpf_lxc asks it of a packet leaving
   * the pod before the service lookup): what lookup() returns when that key hits (refreshed as
   * lookup() would), undefined when it misses or is not tried (a pure SYN, an ICMP error, a
   * non-first fragment). A packet it finds is not looked up as a service.
   */
  lookupFirst(direction: Direction, p: CtPacket, refresh = true): CtLookup | undefined {
    if (p.fragment || isIcmpError(p.protocol, icmpTypeOf(p))) return undefined;
    const egress = direction === 'egress';
    const first = this.order(egress, p)[0]!;
    if (this.pureSyn(p)) return undefined;
    const found = this.match([first], egress, p, this.now(), refresh);
    return found.status === 'new' ? undefined : found;
  }

  private pureSyn(p: CtPacket): boolean {
    return p.protocol === Proto.TCP && ((p.tcpFlags ?? 0) & (TcpFlags.SYN | TcpFlags.ACK)) === TcpFlags.SYN;
  }

  /** The keys a packet tries, in order, with the status a hit on each means. */
  private order(egress: boolean, p: CtPacket): readonly ['reply' | 'established', CtKey][] {
    const [sport, dport] = ctPorts(p);
    const reply = replyKey(p.src, p.dst, sport, dport, p.protocol, egress ? TupleFlags.IN : TupleFlags.OUT);
    const forward = reverseKey(reply);
    // ct_forward_first: the sender's port above the other's tries the forward key first
    return this.pureSyn(p)
      ? [['established', forward]]
      : sport > dport ? [['established', forward], ['reply', reply]] : [['reply', reply], ['established', forward]];
  }

  /** The first of `order`'s keys with a live entry (refreshed with `refresh`), else new. */
  private match(order: readonly ['reply' | 'established', CtKey][], egress: boolean, p: CtPacket, now: number, refresh: boolean): CtLookup {
    const pureSyn = this.pureSyn(p);
    for (const [status, k] of order) {
      const e = this.find(k, now);
      if (!e) continue;
      if (pureSyn && e.flags & CLOSING) return { status: 'reopened', track: true };
      if (refresh) this.refresh(e, k, egress, p, now);
      return { status, track: false };
    }
    return { status: 'new', track: true };
  }

  /** Whether the packet an ICMP error quotes (sent the other way, to the error's destination) is tracked. */
  private related(egress: boolean, p: CtPacket, now: number): boolean {
    const inner = p.inner!;
    if (parseAddr(inner.src)?.value !== parseAddr(p.dst)?.value || familyOf(inner.src) !== familyOf(p.dst)) return false;
    const [sport, dport] = ctPorts(inner);
    const k = replyKey(inner.src, inner.dst, sport, dport, inner.protocol, egress ? TupleFlags.OUT : TupleFlags.IN);
    return this.find(k, now) !== undefined || this.find(reverseKey(k), now) !== undefined;
  }

  private refresh(e: CtEntry, k: CtKey, egress: boolean, p: CtPacket, now: number): void {
    if (egress) {
      e.txPackets++;
      e.txBytes += p.length ?? 0;
    } else {
      e.rxPackets++;
      e.rxBytes += p.length ?? 0;
    }
    const tcpFlags = p.tcpFlags ?? 0;
    if (p.protocol !== Proto.TCP) e.lifetime = now + this.timeouts.any;
    else if ((e.flags & CLOSING) !== CLOSING) {
      let f = e.flags;
      if (!(tcpFlags & TcpFlags.SYN)) f |= CtFlags.SeenNonSyn;
      if (tcpFlags & TcpFlags.RST) f |= CLOSING;
      else if (tcpFlags & TcpFlags.FIN) f |= egress ? CtFlags.TxClosing : CtFlags.RxClosing;
      e.lifetime = now + ((f & CLOSING) === CLOSING ? this.timeouts.close : f & CtFlags.SeenNonSyn ? this.timeouts.tcp : this.timeouts.syn);
      e.flags = f;
    }
    const seen = egress ? e.txFlagsSeen : e.rxFlagsSeen;
    const last = egress ? e.lastTxReport : e.lastRxReport;
    if ((seen | tcpFlags) !== seen || last + this.reportInterval < now) {
      if (egress) {
        e.txFlagsSeen = seen | tcpFlags;
        e.lastTxReport = now;
      } else {
        e.rxFlagsSeen = seen | tcpFlags;
        e.lastRxReport = now;
      }
    }
    this.store.set(k, e);
  }

  /** ct_create: the entry of an allowed new (or reopened) connection; false when it could not be written. */
  create(direction: Direction, p: CtPacket, srcIdentity: number): boolean {
    const egress = direction === 'egress';
    const now = this.now();
    const tcpFlags = p.tcpFlags ?? 0;
    let flags = 0;
    let lifetime = now + this.timeouts.any;
    if (p.protocol === Proto.TCP) {
      if (tcpFlags & TcpFlags.RST) flags = CLOSING;
      else if (tcpFlags & TcpFlags.FIN) flags = egress ? CtFlags.TxClosing : CtFlags.RxClosing;
      lifetime = now + (flags === CLOSING ? this.timeouts.close : this.timeouts.syn);
    }
    const len = p.length ?? 0;
    const e: CtEntry = {
      rxPackets: egress ? 0 : 1, rxBytes: egress ? 0 : len, txPackets: egress ? 1 : 0, txBytes: egress ? len : 0,
      lifetime, flags, revNat: 0,
      txFlagsSeen: egress ? tcpFlags : 0, rxFlagsSeen: egress ? 0 : tcpFlags,
      srcSecId: srcIdentity, lastTxReport: egress ? now : 0, lastRxReport: egress ? 0 : now,
    };
    return this.store.set(forwardKey(direction, p), e);
  }
}
