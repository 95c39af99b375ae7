/**
 * The in-memory Datapath: the maps and loader of this folder plus the verdict of a packet,
 * evaluated by the shared verdict model (verdict-model.ts) exactly as bpf_lxc does: the peer's
 * identity from the ipcache (longest prefix, world when none), then the endpoint's policy LPM
 * table. Drops are counted by reason. Host interfaces are simulated: every interface exists until
 * removeLink() says it is gone (so endpoint GC can be exercised unprivileged).
 */
import { ReservedIdentity, type Datapath, type Direction, type PacketSpec, type Verdict } from '../datapath/types.js';
import { decideVerdict, peerAddress, type VerdictPacket } from '../datapath/verdict-model.js';
import { MemoryLoader } from './loader.js';
import { MemoryMaps } from './maps.js';

/** The in-memory datapath. */
export class MemoryDatapath implements Datapath {
  readonly mode = 'memory' as const;
  readonly loader = new MemoryLoader();
  readonly maps = new MemoryMaps();
  private readonly drops = new Map<string, number>();
  private readonly goneLinks = new Set<string>();

  /** See Datapath. Throws when the endpoint has no policy map (it was never regenerated). */
  async verdict(endpointId: number, direction: Direction, packet: PacketSpec | VerdictPacket): Promise<Verdict> {
    const table = this.maps.policyTable(endpointId);
    if (!table) throw new Error(`endpoint ${endpointId} has no policy map (${direction} verdict): is it regenerated?`);
    const peer = this.maps.lookupIPCache(peerAddress(direction, packet))?.identity ?? ReservedIdentity.world;
    const v = decideVerdict(table, direction, peer, packet);
    if (!v.allowed && v.reason) this.drops.set(v.reason, (this.drops.get(v.reason) ?? 0) + 1);
    return v;
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
