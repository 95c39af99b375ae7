/**
 * The in-memory Datapath: the maps and loader of this folder, a conntrack table, and the verdict
 * of a packet, evaluated by the shared verdict model (verdict-model.ts, conntrack.ts) exactly as
 * bpf_lxc does: conntrack first (replies and related ICMP errors of tracked connections pass), then
 * the peer's identity from the ipcache (longest prefix, world when none) and the endpoint's policy
 * LPM table. `verdict()` asks without changing anything; `process()` is a packet going through
 * (conntrack entries refreshed and created). Drops are counted by reason. Host interfaces are
 * simulated: every interface exists until removeLink() says it is gone (so endpoint GC can be
 * exercised unprivileged).
 */
import { Conntrack, DEFAULT_CT_TIMEOUTS, MemoryCtStore, type CtTimeouts } from '../../datapath/conntrack.js';
import { ReservedIdentity, type Datapath, type Direction, type PacketSpec, type Verdict } from '../../datapath/types.js';
import { decidePacket, peerAddress, type PacketOutcome, type VerdictPacket } from '../../datapath/verdict-model.js';
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
}

/** The process's CLOCK_MONOTONIC in seconds (bpf_ktime_get_ns()'s clock). */
export const monotonicClock = (): number => Number(process.hrtime.bigint()) / 1e9;

/** The in-memory datapath. */
export class MemoryDatapath implements Datapath {
  readonly mode = 'memory' as const;
  readonly loader = new MemoryLoader();
  readonly maps = new MemoryMaps();
  /** The conntrack table (both families, TCP and non-TCP). */
  readonly conntrack: MemoryCtStore;
  private readonly ct: Conntrack;
  private readonly drops = new Map<string, number>();
  private readonly goneLinks = new Set<string>();

  constructor(opts: MemoryDatapathOptions = {}) {
    this.conntrack = new MemoryCtStore(opts.ctMaxEntries);
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
    const peer = this.maps.lookupIPCache(peerAddress(direction, packet))?.identity ?? ReservedIdentity.world;
    const cfg = this.loader.get(endpointId)?.config;
    const ct = cfg?.options?.Conntrack === 'Disabled' ? undefined : this.ct;
    const out = decidePacket(ct, table, direction, peer, packet, cfg?.identity ?? 0, commit);
    const reason = out.verdict.reason;
    if (reason) this.drops.set(reason, (this.drops.get(reason) ?? 0) + 1);
    return out;
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
