/**
 * The in-memory Datapath: the maps and loader of this folder, a conntrack table, and the verdict
 * of a packet, evaluated by the shared verdict model (src/datapath/model: verdict.ts, conntrack.ts) exactly as
 * bpf_lxc does: conntrack first (replies and related ICMP errors of tracked connections pass), then
 * the peer's identity from the ipcache (longest prefix, world when none) and the endpoint's policy
 * LPM table. `verdict()` asks without changing anything; `process()` is a packet going through
 * (conntrack entries refreshed and created). Drops are counted by reason. Host interfaces are
 * simulated: every interface exists until removeLink() says it is gone (so endpoint GC can be
 * exercised unprivileged). A packet from a pod to a service is translated first (model/lb.ts: the
 * LB maps the loadbalancer cell writes into `lbMaps`), and judged against its backend.
 */
import { Conntrack, forwardKey } from '../../datapath/model/conntrack.js';
import { DEFAULT_CT_TIMEOUTS, type CtTimeouts } from '../../datapath/conntrack.js';
import { MemoryCtStore } from '../../datapath/memory/ct-store.js';
import { memoryLBMaps } from '../../datapath/memory/lb-maps.js';
import { lbTranslate, revNat, type AffinityEntry } from '../../datapath/model/lb.js';
import { ReservedIdentity, type Datapath, type Direction, type PacketSpec, type Verdict } from '../../datapath/types.js';
import { decidePacket, passesUntracked, peerAddress, sourceVerdict, type PacketOutcome, type VerdictPacket } from '../../datapath/model/verdict.js';
import { MemoryLoader } from './loader.js';
import { MemoryMaps } from './maps.js';

/** Options of the memory datapath. */
export interface MemoryDatapathOptions {
  /** Conntrack lifetimes (default: Cilium's). */
  readonly ctTimeouts?: CtTimeouts;
  /** CLOCK_MONOTONIC in seconds (default: the process's monotonic clock, the kernel's). */
  readonly clock?: () => number;
  /** Conntrack entries per kind before the least recently used go (default: Cilium's map sizes). */
  readonly ctMaxEntries?: { readonly tcp: number; readonly any: number };
  /** Random numbers in [0, 1) for the backend of a new flow (default Math.random). */
  readonly random?: () => number;
}

/** The process's CLOCK_MONOTONIC in seconds (bpf_ktime_get_ns()'s clock). */
export const monotonicClock = (): number => Number(process.hrtime.bigint()) / 1e9;

/** The in-memory datapath. */
export class MemoryDatapath implements Datapath {
  readonly mode = 'memory' as const;
  readonly loader = new MemoryLoader();
  readonly maps = new MemoryMaps();
  /** The load-balancing maps (the loadbalancer cell writes them). */
  readonly lbMaps = memoryLBMaps();
  /** ClientIP affinity choices (the LRU affinity maps). */
  private readonly affinity = new Map<string, AffinityEntry>();
  private readonly random: () => number;
  private readonly timeouts: CtTimeouts;
  /** The conntrack table (both families, TCP and non-TCP). */
  readonly conntrack: MemoryCtStore;
  private readonly ct: Conntrack;
  private readonly drops = new Map<string, number>();
  private readonly goneLinks = new Set<string>();

  constructor(opts: MemoryDatapathOptions = {}) {
    this.conntrack = new MemoryCtStore(opts.ctMaxEntries);
    this.random = opts.random ?? Math.random;
    this.timeouts = opts.ctTimeouts ?? DEFAULT_CT_TIMEOUTS;
    this.ct = new Conntrack(this.conntrack, opts.ctTimeouts ?? DEFAULT_CT_TIMEOUTS, opts.clock ?? monotonicClock);
  }

  /** See Datapath: what the program would do with the packet now; conntrack is read, not changed. Throws when the endpoint has no policy map (it was never regenerated). */
  async verdict(endpointId: number, direction: Direction, packet: PacketSpec | VerdictPacket): Promise<Verdict> {
    return this.decide(endpointId, direction, packet, false).verdict;
  }

  /** The packet goes through the endpoint's program: the verdict, and conntrack refreshed or created as the program does. */
  process(endpointId: number, direction: Direction, packet: VerdictPacket): PacketOutcome {
    return this.decide(endpointId, direction, packet, true);
  }

  private decide(endpointId: number, direction: Direction, packet: VerdictPacket, commit: boolean): PacketOutcome {
    const table = this.maps.policyTable(endpointId);
    if (!table) throw new Error(`endpoint ${endpointId} has no policy map (${direction} verdict): is it regenerated?`);
    const cfg = this.loader.get(endpointId)?.config;
    const ct = cfg?.options?.Conntrack === 'Disabled' ? undefined : this.ct;
    // a loaded endpoint's program drops what the pod sends from an address that is not its own
    const spoofed = cfg && sourceVerdict(direction, packet, cfg, ReservedIdentity.world);
    if (spoofed) {
      this.drops.set('invalid-source', (this.drops.get('invalid-source') ?? 0) + 1);
      return { verdict: spoofed, ct: 'new' };
    }
    // a packet from the pod to a service goes to a backend first (policy is the backend's), unless
    // conntrack finds it under its own tuple first (bpf_lxc's ct_lookup_first): a reply, or a
    // connection that was not translated when it was opened keeps going as it is
    const probed = direction === 'egress' && ct && !passesUntracked(direction, packet) ? ct.lookupFirst(direction, packet, commit) : undefined;
    const lb = direction === 'egress' && !probed ? lbTranslate({ maps: this.lbMaps, ct: this.conntrack, now: this.ct.now(), serviceLifetime: packet.protocol === 6 ? this.timeouts.tcp : this.timeouts.any, random: this.random, affinity: this.affinity }, packet, commit) : { kind: 'none' as const };
    if (lb.kind === 'no-service' || lb.kind === 'no-backend') {
      this.drops.set(lb.kind, (this.drops.get(lb.kind) ?? 0) + 1);
      return { verdict: { allowed: false, reason: lb.kind, peerIdentity: ReservedIdentity.world, ...(lb.kind === 'no-backend' && lb.reject ? { rejected: true as const } : {}) }, ct: 'new' };
    }
    const pkt = lb.kind === 'translated' ? lb.packet : packet;
    const peer = this.maps.lookupIPCache(peerAddress(direction, pkt))?.identity ?? ReservedIdentity.world;
    let out = decidePacket(ct, table, direction, peer, pkt, cfg?.identity ?? 0, commit, probed);
    if (lb.kind === 'translated') {
      const frontend = `${lb.vip.includes(':') ? `[${lb.vip}]` : lb.vip}:${lb.vport}`;
      out = { ...out, verdict: { ...out.verdict, service: { frontend, backend: `${pkt.dst.includes(':') ? `[${pkt.dst}]` : pkt.dst}:${pkt.dport}`, revNat: lb.revNat } } };
      // the connection's entry carries the rev-NAT index, for its replies
      const k = forwardKey('egress', pkt);
      const e = out.verdict.allowed && commit ? this.conntrack.get(k) : undefined;
      if (e && e.revNat !== lb.revNat) this.conntrack.set(k, { ...e, revNat: lb.revNat });
    } else if (direction === 'ingress' && (out.ct === 'reply' || out.ct === 'related')) {
      out = this.revNat(out, packet);
    }
    const reason = out.verdict.reason;
    if (reason) this.drops.set(reason, (this.drops.get(reason) ?? 0) + 1);
    return out;
  }

  /** A reply of a connection made to a service: its source is rewritten to the frontend. */
  private revNat(out: PacketOutcome, p: VerdictPacket): PacketOutcome {
    const orig = forwardKey('egress', { src: p.dst, dst: p.src, sport: p.dport, dport: p.sport ?? 0, protocol: p.protocol });
    const e = this.conntrack.get(orig);
    const fe = e && revNat(this.lbMaps, e.revNat, p.src.includes(':'));
    if (!fe) return out;
    const host = (ip: string, port: number): string => `${ip.includes(':') ? `[${ip}]` : ip}:${port}`;
    return { ...out, verdict: { ...out.verdict, service: { frontend: host(fe.address, fe.port), backend: host(p.src, p.sport ?? 0), revNat: e.revNat } } };
  }

  /** Deletes the expired conntrack entries (the BPF datapath's garbage collection); returns how many. */
  conntrackGC(): number {
    const now = this.ct.now();
    return this.conntrack.deleteWhere((_k, e) => e.lifetime < now);
  }

  /** See Datapath. */
  async dropCounters(): Promise<Readonly<Record<string, number>>> {
    return Object.fromEntries([...this.drops.entries()].sort(([a], [b]) => a.localeCompare(b)));
  }

  /** Whether a simulated host interface exists. */
  async linkExists(ifName: string): Promise<boolean> {
    return !this.goneLinks.has(ifName);
  }

  /** Simulates the removal of a host interface (endpoint GC then removes its endpoint). */
  removeLink(ifName: string): void {
    this.goneLinks.add(ifName);
  }

  /** Simulates a host interface (re)appearing. */
  addLink(ifName: string): void {
    this.goneLinks.delete(ifName);
  }
}
