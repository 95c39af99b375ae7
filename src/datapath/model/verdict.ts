/**
 * The verdict of one packet, computed exactly as bpf/bpf_lxc.c computes it (pure, no I/O). Both
 * datapaths share it: the memory datapath answers `Datapath.verdict` with it; the BPF datapath's
 * tests check the kernel against it (test/fixtures/verdict-cases.ts).
 *
 * Steps, from the endpoint's point of view:
 *   0. a packet the pod sends (egress) from an address that is not its own of that family drops
 *      ('invalid-source', Cilium's DROP_INVALID_SIP) before a service or conntrack sees it, except
 *      ARP, neighbour discovery and link-local MLD (sourceVerdict());
 *   1. the peer address is the destination for egress, the source for ingress; its identity is the
 *      longest-prefix ipcache match, or world (2) when nothing matches;
 *   2. ARP and IPv6 neighbour discovery (ICMPv6 types 133-137) pass, and so does the MLD a pod
 *      sends (types 130-132, 143) from its link-local or the unspecified address to ff02::/16;
 *   3. ingress from the host identity (1) passes (allow-localhost);
 *   4. egress ICMP/ICMPv6 echo (request or reply) to the host identity passes;
 *   5. the policy map is looked up twice (longest prefix): with the peer identity and with identity
 *      0. A deny from either drops ('policy-deny'); else a match from either passes; else drop
 *      ('policy').
 * decidePacket() puts conntrack (conntrack.ts) in front, as bpf_lxc does: replies and related ICMP
 * errors of tracked connections pass without steps 3-5; a new connection the policy allows gets
 * its entry.
 */
import { parseAddr, parseCidr, prefixMask, type Cidr } from '../../lib/addr.js';
import type { CtLookup, CtPacketFields, CtStatus } from '../conntrack.js';
import type { Conntrack } from './conntrack.js';
import { PolicyLpm } from './policy-lpm.js';
import { Proto, ReservedIdentity, type Direction, type IPCacheEntry, type PacketSpec, type PolicyEntry, type Verdict } from '../types.js';

/**
 * A packet for the model: PacketSpec plus what the program also looks at. `icmpType` matters for
 * ICMP/ICMPv6 only (default: echo request, 8 or 128); `arp` marks an ARP packet (src/dst are the
 * sender and target protocol addresses); the conntrack fields (source port, TCP flags, echo
 * identifier, an ICMP error's quoted packet) matter to decidePacket only.
 */
export interface VerdictPacket extends PacketSpec, CtPacketFields {
  readonly arp?: boolean;
}

/** The ipcache as a longest-prefix-match table (IPv4 and IPv6). */
export class IPCacheLpm {
  private readonly entries: { cidr: Cidr; identity: number }[];

  /** Builds the table; throws a plain Error for an entry whose CIDR does not parse. */
  constructor(entries: readonly IPCacheEntry[]) {
    this.entries = entries
      .map((e) => ({ cidr: parseCidr(e.cidr), identity: e.identity }))
      .sort((a, b) => b.cidr.prefix - a.cidr.prefix);
  }

  /** The identity of an address: the longest matching prefix's, world (2) when none matches. */
  resolve(ip: string): number {
    const a = parseAddr(ip);
    if (!a) return ReservedIdentity.world;
    for (const e of this.entries) {
      const c = e.cidr;
      if (c.family === a.family && (a.value & prefixMask(c.bits, c.prefix)) === c.network) return e.identity;
    }
    return ReservedIdentity.world;
  }
}

function isNeighbourDiscovery(p: VerdictPacket): boolean {
  const t = p.icmpType ?? 128;
  return p.protocol === Proto.ICMPV6 && t >= 133 && t <= 137 && parseAddr(p.src)?.family === 'ipv6';
}

const LINK_LOCAL = parseCidr('fe80::/10');
const LINK_SCOPE_MULTICAST = parseCidr('ff02::/16');

/**
 * MLD (RFC 3810: query, report, done, v2 report) from the link-local or the unspecified address to
 * a link-scope group: what every pod's kernel sends, IPv6 address or not (bpf_lxc's
 * is_link_local_mld()).
 */
export function isLinkLocalMld(p: VerdictPacket): boolean {
  const t = p.icmpType ?? 128;
  if (p.protocol !== Proto.ICMPV6 || !((t >= 130 && t <= 132) || t === 143)) return false;
  const src = parseAddr(p.src);
  const dst = parseAddr(p.dst);
  if (src?.family !== 'ipv6' || dst?.family !== 'ipv6') return false;
  const within = (a: bigint, c: Cidr): boolean => (a & prefixMask(c.bits, c.prefix)) === c.network;
  return within(dst.value, LINK_SCOPE_MULTICAST) && (src.value === 0n || within(src.value, LINK_LOCAL));
}

/** Whether bpf_lxc passes the packet before anything else: ARP, neighbour discovery, a pod's link-local MLD. */
export function passesUntracked(direction: Direction, p: VerdictPacket): boolean {
  return !!p.arp || isNeighbourDiscovery(p) || (direction === 'egress' && isLinkLocalMld(p));
}

function isEcho(p: VerdictPacket): boolean {
  if (p.protocol === Proto.ICMP) return (p.icmpType ?? 8) === 8 || p.icmpType === 0;
  if (p.protocol === Proto.ICMPV6) return (p.icmpType ?? 128) === 128 || p.icmpType === 129;
  return false;
}

/** The addresses an endpoint owns (none of a family: every source of that family is foreign). */
export interface OwnAddresses {
  readonly ipv4?: string;
  readonly ipv6?: string;
}

/**
 * Step 0: the drop of an egress packet sent from an address that is not the endpoint's own;
 * undefined when the packet may go on (ingress, ARP, neighbour discovery, link-local MLD, or its
 * own address).
 */
export function sourceVerdict(direction: Direction, packet: VerdictPacket, own: OwnAddresses, peerIdentity: number): Verdict | undefined {
  if (direction !== 'egress' || passesUntracked(direction, packet)) return undefined;
  const src = parseAddr(packet.src);
  const mine = src && parseAddr((src.family === 'ipv4' ? own.ipv4 : own.ipv6) ?? '');
  if (src && mine && mine.family === src.family && mine.value === src.value) return undefined;
  return { allowed: false, reason: 'invalid-source', peerIdentity };
}

/** The address of the peer: the destination for egress, the source for ingress. */
export function peerAddress(direction: Direction, packet: PacketSpec): string {
  return direction === 'egress' ? packet.dst : packet.src;
}

/**
 * Steps 2-5 for a peer whose identity is already resolved: the verdict of `packet` under the
 * endpoint's policy table. ICMP packets and non-first fragments carry no port (dport is taken as 0,
 * like the program).
 */
export function decideVerdict(policy: PolicyLpm, direction: Direction, peerIdentity: number, packet: VerdictPacket): Verdict {
  const allow: Verdict = { allowed: true, peerIdentity };
  if (packet.arp || isNeighbourDiscovery(packet)) return allow;
  const host = peerIdentity === ReservedIdentity.host;
  if (host && direction === 'ingress') return allow;
  if (host && direction === 'egress' && isEcho(packet)) return allow;
  const egress = direction === 'egress';
  const hasPorts = !packet.fragment && (packet.protocol === Proto.TCP || packet.protocol === Proto.UDP || packet.protocol === Proto.SCTP);
  const dport = hasPorts ? packet.dport : 0;
  const peer = policy.lookup(egress, peerIdentity, packet.protocol, dport);
  const any = policy.lookup(egress, 0, packet.protocol, dport);
  if (peer?.deny || any?.deny) return { allowed: false, reason: 'policy-deny', peerIdentity };
  if (peer || any) return allow;
  return { allowed: false, reason: 'policy', peerIdentity };
}

/** The whole verdict (steps 1-5) over plain ipcache and policy entries. */
export function modelVerdict(
  ipcache: readonly IPCacheEntry[] | IPCacheLpm,
  policy: readonly PolicyEntry[] | PolicyLpm,
  direction: Direction,
  packet: VerdictPacket,
): Verdict {
  const cache = ipcache instanceof IPCacheLpm ? ipcache : new IPCacheLpm(ipcache);
  const table = policy instanceof PolicyLpm ? policy : PolicyLpm.fromPolicy(policy);
  return decideVerdict(table, direction, cache.resolve(peerAddress(direction, packet)), packet);
}

/** What bpf_lxc did with a packet: the verdict and what conntrack found. */
export interface PacketOutcome {
  readonly verdict: Verdict;
  readonly ct: CtStatus;
}

/**
 * bpf_lxc's decide(): ARP, neighbour discovery and a pod's link-local MLD pass untracked; a reply or related packet of a
 * tracked connection passes; anything else gets the policy verdict (steps 3-5), and a new
 * connection the policy allows gets its conntrack entry (`endpointIdentity` is the opener for
 * egress, the peer for ingress); a failed write drops ('ct-insert-failed'). Without `ct`
 * (conntrack disabled) every packet is new and untracked. With `commit` false the packet only
 * asks: nothing is refreshed or created. `probed`: what Conntrack.lookupFirst() already found
 * for this packet (bpf_lxc's ct_lookup keeps it).
 */
export function decidePacket(
  ct: Conntrack | undefined,
  policy: PolicyLpm,
  direction: Direction,
  peerIdentity: number,
  packet: VerdictPacket,
  endpointIdentity: number,
  commit = true,
  probed?: CtLookup,
): PacketOutcome {
  if (passesUntracked(direction, packet)) return { verdict: { allowed: true, peerIdentity }, ct: 'new' };
  const found = probed ?? (ct ? ct.lookup(direction, packet, commit) : { status: 'new' as const, track: false });
  if (found.status === 'reply' || found.status === 'related') return { verdict: { allowed: true, peerIdentity }, ct: found.status };
  const verdict = decideVerdict(policy, direction, peerIdentity, packet);
  if (!verdict.allowed || !commit || !found.track || !ct) return { verdict, ct: found.status };
  if (!ct.create(direction, packet, direction === 'egress' ? endpointIdentity : peerIdentity)) {
    return { verdict: { allowed: false, reason: 'ct-insert-failed', peerIdentity }, ct: found.status };
  }
  return { verdict, ct: found.status };
}
