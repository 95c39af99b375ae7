/**
 * Service translation as bpf_lxc does it for a packet from a pod (Cilium's lb4_lookup_service /
 * lb4_local / lb4_rev_nat), pure over the LB maps and a conntrack store, so the memory datapath
 * and its tests behave as the kernel:
 *   1. the destination is looked up in the services map (address, port, protocol; then protocol
 *      ANY); not found but the address has a wildcard entry (port 0): dropped ('no-service');
 *   2. a service without backends for new flows answers per --service-no-backend-response
 *      ('no-backend': reject or drop);
 *   3. the CT_SERVICE entry (TUPLE_F_SERVICE, backend ID in its rx_bytes) keeps a flow on its
 *      backend; a backend that is gone, or not active for a new TCP connection (SYN), is replaced;
 *   4. a new flow's backend: ClientIP affinity (an unexpired choice of the same client), else
 *      Maglev (the service's table, when there is one, at a hash of the 5-tuple) or random
 *      (slot 1..count);
 *   5. DNAT to the backend; the connection's CT entry carries the rev-NAT index, so a reply's
 *      source is rewritten back to the frontend (revNat()).
 */
import { endianness } from 'node:os';
import { parseAddr } from '../../lib/addr.js';
import { TupleFlags, type CtEntry, type CtKey, type CtStore } from '../conntrack.js';
import { BackendFlag, SvcFlag, SvcFlag2, type LBMapSet, type LBServiceKey, type LBServiceValue } from '../lb-maps.js';
import { Proto } from '../types.js';
import type { VerdictPacket } from './verdict.js';

/** What happened to a packet at the service lookup. */
export type LBOutcome =
  | { readonly kind: 'none' }
  | { readonly kind: 'no-service'; readonly revNat: number }
  /** `reject`: the sender is answered with an ICMP port unreachable (else the packet is just dropped). */
  | { readonly kind: 'no-backend'; readonly revNat: number; readonly reject: boolean }
  | { readonly kind: 'translated'; readonly packet: VerdictPacket; readonly backendId: number; readonly revNat: number; readonly vip: string; readonly vport: number };

/** A ClientIP affinity choice (the LRU affinity map's entry). */
export interface AffinityEntry {
  readonly backendId: number;
  lastUsed: number;
}

/** What the translation reads besides the LB maps. */
export interface LBModelState {
  readonly maps: LBMapSet;
  /** The conntrack store (CT_SERVICE entries live beside the connections'). */
  readonly ct?: CtStore;
  /** CLOCK_MONOTONIC seconds. */
  readonly now: number;
  /** CT_SERVICE lifetime in seconds. */
  readonly serviceLifetime: number;
  /** [0, 1) */
  readonly random: () => number;
  /** Affinity entries by `client|revNat`. */
  readonly affinity: Map<string, AffinityEntry>;
}

function family(ip: string): 4 | 6 | undefined {
  const a = parseAddr(ip);
  return a ? (a.family === 'ipv4' ? 4 : 6) : undefined;
}

/** The master entry of a destination: exact protocol, then ANY; with `wildcard` whether the address has a wildcard entry. */
export function lookupService(maps: LBMapSet, dst: string, dport: number, proto: number): { key: LBServiceKey; value: LBServiceValue } | { wildcard: boolean } | undefined {
  const f = family(dst);
  if (!f) return undefined;
  const svc = f === 4 ? maps.services4 : maps.services6;
  for (const p of [proto, 0]) {
    const key: LBServiceKey = { address: dst, port: dport, slot: 0, proto: p, scope: 0 };
    const value = svc.get(key);
    if (value) return { key, value };
  }
  return { wildcard: svc.get({ address: dst, port: 0, slot: 0, proto: 0, scope: 0 }) !== undefined };
}

/** The CT_SERVICE key of a packet to a frontend. */
export function serviceCtKey(p: VerdictPacket): CtKey {
  return { family: family(p.src) === 6 ? 'ipv6' : 'ipv4', daddr: p.dst, saddr: p.src, dport: p.dport, sport: p.sport ?? 0, nexthdr: p.protocol, flags: TupleFlags.SERVICE };
}

const LE = endianness() === 'LE';

/** The 16 address bytes of the datapath's struct pkt as four host-order words (IPv4: the first). */
function words(ip: string): [number, number, number, number] {
  const b = Buffer.alloc(16);
  const a = parseAddr(ip);
  if (a?.family === 'ipv4') b.writeUInt32BE(Number(a.value), 0);
  else if (a) {
    b.writeBigUInt64BE(a.value >> 64n, 0);
    b.writeBigUInt64BE(a.value & 0xffffffffffffffffn, 8);
  }
  const r = (o: number): number => (LE ? b.readUInt32LE(o) : b.readUInt32BE(o));
  return [r(0), r(4), r(8), r(12)];
}

/** A network-order port as the datapath reads it from memory (a host-order u16). */
const be16 = (port: number): number => (LE ? ((port & 0xff) << 8) | (port >> 8) : port);

/** bpf/lib/lb.h lb_hash(): the 5-tuple hash that indexes a Maglev table (same value in the kernel). */
export function lbHash(src: string, dst: string, sport: number, dport: number, protocol: number): number {
  const s = words(src);
  const d = words(dst);
  let h = (((be16(sport) << 16) | be16(dport)) ^ protocol) >>> 0;
  h = (h ^ s[0] ^ Math.imul(s[1], 31) ^ Math.imul(s[2], 131) ^ Math.imul(s[3], 1031)) >>> 0;
  h = (h ^ Math.imul(d[0], 7) ^ Math.imul(d[1], 37) ^ Math.imul(d[2], 137) ^ Math.imul(d[3], 1033)) >>> 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b) >>> 0;
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35) >>> 0;
  h ^= h >>> 16;
  return h >>> 0;
}

function hash5(p: VerdictPacket): number {
  return lbHash(p.src, p.dst, p.sport ?? 0, p.dport, p.protocol);
}

const isSyn = (p: VerdictPacket): boolean => p.protocol === Proto.TCP && ((p.tcpFlags ?? 0x02) & 0x12) === 0x02;

/** Service translation of a packet leaving a pod; with `commit` false nothing is written. */
export function lbTranslate(s: LBModelState, p: VerdictPacket, commit = true): LBOutcome {
  if (p.protocol !== Proto.TCP && p.protocol !== Proto.UDP && p.protocol !== Proto.SCTP) return { kind: 'none' };
  const f = family(p.dst);
  const found = lookupService(s.maps, p.dst, p.dport, p.protocol);
  if (!found || !f) return { kind: 'none' };
  if ('wildcard' in found) return found.wildcard ? { kind: 'no-service', revNat: 0 } : { kind: 'none' };
  const { key, value: master } = found;
  const svc = f === 4 ? s.maps.services4 : s.maps.services6;
  const backends = f === 4 ? s.maps.backends4 : s.maps.backends6;
  const ctKey = serviceCtKey(p);
  const entry = s.ct?.get(ctKey);
  let backendId = entry && entry.lifetime >= s.now && entry.revNat === master.revNat ? entry.rxBytes : 0;
  const current = backendId ? backends.get(backendId) : undefined;
  if (!current || (current.flags !== BackendFlag.active && isSyn(p))) backendId = 0;
  const affinityKey = `${p.src}|${master.revNat}`;
  const affinity = (master.flags & SvcFlag.affinity) !== 0;
  if (!backendId) {
    // bpf_lxc answers a service without backends for new flows per --service-no-backend-response
    if (master.count === 0) return { kind: 'no-backend', revNat: master.revNat, reject: (master.flags2 & SvcFlag2.noBackendDrop) === 0 };
    if (affinity) {
      const a = s.affinity.get(affinityKey);
      const b = a && backends.get(a.backendId);
      if (a && a.lastUsed + master.backendId >= s.now && b?.flags === BackendFlag.active && s.maps.affinityMatch.get({ backendId: a.backendId, revNat: master.revNat })) backendId = a.backendId;
    }
    // a Maglev table is there with --bpf-lb-algorithm=maglev
    if (!backendId) {
      const table = (f === 4 ? s.maps.maglev4 : s.maps.maglev6).get(master.revNat);
      if (table?.length) backendId = table[hash5(p) % table.length]!;
    }
    if (!backendId) {
      const slot = Math.floor(s.random() * master.count) + 1;
      backendId = svc.get({ ...key, slot })?.backendId ?? 0;
    }
    // a slot or backend missing under a non-zero count (never, with the writer's order): dropped unanswered
    if (!backendId || !backends.get(backendId)) return { kind: 'no-backend', revNat: master.revNat, reject: false };
  }
  const be = backends.get(backendId)!;
  if (commit) {
    if (s.ct) {
      const e: CtEntry = entry ?? { rxPackets: 0, rxBytes: 0, txPackets: 0, txBytes: 0, lifetime: 0, flags: 0, revNat: 0, txFlagsSeen: 0, rxFlagsSeen: 0, srcSecId: 0, lastTxReport: 0, lastRxReport: 0 };
      s.ct.set(ctKey, { ...e, rxBytes: backendId, revNat: master.revNat, lifetime: s.now + s.serviceLifetime, txPackets: e.txPackets + 1 });
    }
    if (affinity) s.affinity.set(affinityKey, { backendId, lastUsed: s.now });
  }
  return { kind: 'translated', packet: { ...p, dst: be.address, dport: be.port }, backendId, revNat: master.revNat, vip: p.dst, vport: p.dport };
}

/** The frontend a reply's source is rewritten to (rev-NAT), or undefined for an index not in the map. */
export function revNat(maps: LBMapSet, index: number, ipv6: boolean): { address: string; port: number } | undefined {
  return index ? (ipv6 ? maps.revNat6 : maps.revNat4).get(index) : undefined;
}
