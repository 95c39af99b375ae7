/**
 * BpfDatapath: the Datapath of `--datapath-mode=bpf`. Owns the kernel maps (KernelMaps), the
 * desired-state tables and their reconcilers (BpfMaps) and the program loader (BpfLoader). At start
 * it opens the pinned maps and writes the host's own addresses to the ipcache as the host identity
 * (unknown addresses resolve to world in the program). What endpoints that no longer exist left
 * (programs, policy maps, map entries) is removed during restore, once the restored endpoints are
 * known and before any new one can take their IDs or IPs; pruning starts once the restored
 * endpoints were regenerated, so nothing a restarting agent still owns is taken away while packets
 * keep flowing. Each prune also checks that every endpoint's programs are still attached.
 */
import { hostCidr } from '../../lib/addr.js';
import { networkInterfaces } from 'node:os';
import { Subject, type Observable } from 'rxjs';
import type { LxcValue } from '../../maps/index.js';
import { endpointPrograms, kernelVerdict, pinnedEndpoints, unloadEndpointProgram } from './lxc/index.js';
import { Netlink, withNetlink } from '../../netlink/index.js';
import type { Logger } from '../../hive/logger.js';
import { IPCACHE_MAP, LXC_MAP } from '../../datapath/map-names.js';
import { ReservedIdentity, type Datapath, type Direction, type LiveEndpoint, type LostProgram, type MonitorEventSource, type PacketSpec, type Verdict } from '../../datapath/types.js';
import type { CtTimeouts } from '../../datapath/conntrack.js';
import type { VerdictPacket } from '../../datapath/model/verdict.js';
import type { BpfDatapathConfig } from '../../datapath/bpf-config.js';
import { CtGarbageCollector } from './ct-gc.js';
import { staleInterfaceNotDeleted, wrapBpf } from './errors.js';
import { KernelMaps } from './kernel-maps.js';
import { BpfLoader } from './loader.js';
import { BpfMaps, type BpfMapsOptions } from './maps.js';
import { hostCidrKey, lxcKey } from './tables.js';

/** The host's own addresses as host CIDRs (`/32`, `/128`), IPv6 link-local ones left out. */
export function hostAddressCidrs(): string[] {
  const out = new Set<string>();
  for (const addrs of Object.values(networkInterfaces())) {
    for (const a of addrs ?? []) {
      if (a.family === 'IPv6' && /^fe80:/i.test(a.address)) continue;
      out.add(hostCidr(a.address.replace(/%.*$/, '')));
    }
  }
  return [...out].sort();
}

/** The BPF datapath. */
export class BpfDatapath implements Datapath {
  readonly mode = 'bpf' as const;
  readonly kernel: KernelMaps;
  readonly maps: BpfMaps;
  readonly loader: BpfLoader;
  /** Conntrack garbage collection and the scrub of deleted endpoints' addresses. */
  readonly gc: CtGarbageCollector;
  private hostCidrs = new Set<string>();
  /** The socket isHostAddress asks the kernel's routes on, opened at the first question (one per regeneration: opening one each time cost as much as the lookup). */
  private routes?: Netlink;
  private restored = false;
  private readonly lost = new Subject<LostProgram>();
  /** See Datapath: endpoints whose programs a prune found gone from their interface. */
  readonly programsLost$: Observable<LostProgram> = this.lost.asObservable();
  /** See Datapath: the ring buffer pinned under the BPF root, and cellium_metrics' lost-events slot. */
  readonly monitorEvents: MonitorEventSource;

  constructor(
    readonly cfg: BpfDatapathConfig,
    private readonly log: Logger,
    opts: Omit<BpfMapsOptions, 'onError' | 'onEndpointDeleted'> & { readonly ctTimeouts?: CtTimeouts; readonly gcSliceMs?: number; readonly lxcObject?: string } = {},
  ) {
    this.kernel = new KernelMaps(cfg, (r) => log.warn(r, 'a pinned BPF map has another layout than this agent\'s: removed and created anew (its entries are lost)'));
    this.gc = new CtGarbageCollector(this.kernel, { intervalMs: cfg.conntrackGcInterval, maxIntervalMs: cfg.conntrackGcMaxInterval, sliceMs: opts.gcSliceMs });
    this.maps = new BpfMaps(this.kernel, {
      ...opts,
      onError: (table, key, err) => log.warn({ map: table, key, err: err.message }, 'BPF map write failed; retrying with backoff'),
      onEndpointDeleted: (ips) => void this.gc.scrub(ips),
      sharedPolicyMaps: cfg.bpfLxcProgram === 'shared',
    });
    this.loader = new BpfLoader(this.kernel, { object: opts.lxcObject, mode: cfg.bpfAttachMode, ctTimeouts: opts.ctTimeouts, program: cfg.bpfLxcProgram, policyGroups: this.maps.groups });
    this.loader.setGate((c) => this.gc.settled([c.ipv4, c.ipv6]));
    const kernel = this.kernel;
    this.monitorEvents = { get bpfRoot() { return kernel.root; }, eventsLost: () => kernel.traffic().eventsLost };
  }

  /**
   * Opens the maps, recovers the shared policy maps from the slots (or, with per-endpoint programs,
   * gives every endpoint sharing one a copy of its own), starts the reconcilers and publishes the
   * host's addresses.
   */
  start(): void {
    this.kernel.open();
    if (this.maps.groups) {
      const problems = this.maps.groups.recover();
      if (problems.length) this.log.warn({ problems }, 'shared policy maps: some slots could not be recovered; those endpoints keep their slot until their policy is realized');
      const st = this.maps.groups.stats();
      if (st.members) this.log.info({ maps: st.groups, endpoints: st.members }, 'shared policy maps recovered from cellium_policy_maps');
    } else {
      const copied = this.kernel.unsharePolicyPins();
      if (copied.length) this.log.info({ endpointIDs: copied }, 'per-endpoint programs: endpoints that shared a policy map got a copy of their own');
    }
    this.maps.start();
    this.syncHostAddresses();
    this.log.info({ bpfRoot: this.cfg.bpfRoot }, 'BPF datapath maps open');
  }

  /** Stops the reconcilers and closes the fds; programs and pinned maps stay in the kernel. */
  async stop(): Promise<void> {
    await this.gc.stop();
    await this.maps.stop();
    const routes = this.routes;
    this.routes = undefined;
    await routes?.close();
    this.loader.shared?.close();
    this.maps.groups?.close();
    this.kernel.close();
    this.lost.complete();
  }

  /**
   * See Datapath: the node's addresses now (not only at the last prune): one known at the last
   * prune, or one the kernel routes locally now (a single route lookup: listing every interface's
   * addresses per endpoint made creating n endpoints on a node of n veths O(n²)). IPv6 link-local
   * addresses are no host address, as in hostAddressCidrs.
   */
  async isHostAddress(ip: string): Promise<boolean> {
    const cidr = hostCidr(ip);
    if (this.hostCidrs.has(cidr)) return true;
    if (/^fe[89ab]/i.test(ip)) return false;
    const nl = (this.routes ??= Netlink.open());
    try {
      // on the event loop: the kernel answers this lookup without its rtnl lock, within the send
      return nl.isLocalAddressNow(ip);
    } catch (err) {
      // a fresh socket for the next question (this one may be what failed)
      if (this.routes === nl) this.routes = undefined;
      await nl.close().catch(() => undefined);
      throw err;
    }
  }

  /** Writes the host's addresses to the ipcache as the host identity; removes addresses that went away. */
  syncHostAddresses(): void {
    const now = new Set(hostAddressCidrs());
    for (const c of now) this.maps.upsertIPCache({ cidr: c, identity: ReservedIdentity.host });
    for (const c of this.hostCidrs) if (!now.has(c)) this.maps.deleteIPCache(c);
    this.hostCidrs = now;
  }

  /**
   * See Datapath (restore, step 1): removes everything of the endpoints that are not `live` (the
   * endpoints restored from the state directory; no other can exist yet): their programs (link
   * pins; legacy filters on the interfaces their cellium_lxc entries name, when the filter is
   * theirs), their policy maps, their cellium_lxc entries and the ipcache entries of those IPs
   * (unless a live endpoint or something desired holds them). So a new endpoint reusing an ID or
   * an IP never inherits what an interrupted one left. An interface that one of their programs
   * was attached to is deleted too (its pod loses its network rather than run on with no
   * enforcement; a failed delete fails the start). Returns the IDs removed.
   */
  async removeStale(live: readonly LiveEndpoint[]): Promise<number[]> {
    const keep = new Set(live.map((e) => e.id));
    const liveIPs = new Set(live.flatMap((e) => e.ips.map(lxcKey)));
    const staleEntries = this.kernel.lxc.entries().filter(([, v]) => !keep.has(v.endpointId));
    const guarded = staleEntries.filter(([, v]) => this.attachedHere(v.endpointId, v.ifIndex)).map(([, v]) => v);
    // the guarded interfaces go first: detaching their programs before would let their pods talk unenforced meanwhile
    await this.deleteGuarded(guarded);
    const ids = this.removeStalePrograms(keep, staleEntries);
    const ips = staleEntries.map(([ip]) => ip).filter((ip) => !this.maps.lxcTable.get(ip));
    // connections of endpoints deleted while the agent was down: their addresses may be reused
    void this.gc.scrub(ips.filter((ip) => !liveIPs.has(ip)));
    const cidrs = ips.filter((ip) => !liveIPs.has(ip)).map(hostCidrKey).filter((c) => !this.maps.ipcacheTable.get(c));
    for (const ip of ips) this.kernel.lxc.delete(ip);
    for (const c of cidrs) this.kernel.ipcache.delete(c);
    if (ids.length || ips.length) {
      this.log.info({ endpointIDs: ids, lxcEntries: ips.length, ipcacheEntries: cidrs.length }, 'restore: removed the programs, policy maps and map entries of endpoints that were not restored');
    }
    return ids;
  }

  /** Whether a program of endpoint `id` is attached to interface `ifIndex`. */
  private attachedHere(id: number, ifIndex: number): boolean {
    try {
      const p = endpointPrograms(ifIndex);
      return [p.from_container, p.to_container].some((h) => [...h.tcx, h.legacy].some((prog) => prog !== undefined && this.loader.owns(prog, id, ifIndex)));
    } catch {
      return false; // no such interface
    }
  }

  /** Deletes the interfaces stale endpoints' programs were attached to (see removeStale). */
  private async deleteGuarded(guarded: readonly LxcValue[]): Promise<void> {
    if (!guarded.length) return;
    await withNetlink(undefined, async (nl) => {
      const names = new Map((await nl.listLinks()).map((l) => [l.index, l.name]));
      for (const v of guarded) {
        const name = names.get(v.ifIndex);
        if (!name) continue;
        try {
          await nl.deleteLink(name);
        } catch (err) {
          throw staleInterfaceNotDeleted(v.endpointId, name, err);
        }
        this.log.warn({ endpointID: v.endpointId, ifName: name }, 'restore: deleted the interface of an endpoint that was not restored (its pod must be re-created)');
      }
    });
  }

  /**
   * See Datapath (restore, step 2): removes the programs and policy maps of endpoint IDs not among
   * `live` (as step 1), prunes cellium_lxc and cellium_ipcache now, keeping the entries of live
   * endpoints' IPs even when their regeneration failed (their recovery rewrites them), and turns
   * periodic pruning on. Returns the IDs whose programs were removed.
   */
  async restoreDone(live: readonly LiveEndpoint[]): Promise<number[]> {
    const keep = new Set(live.map((e) => e.id));
    const ids = this.removeStalePrograms(keep, this.kernel.lxc.entries().filter(([, v]) => !keep.has(v.endpointId)));
    if (ids.length) this.log.info({ endpointIDs: ids }, 'removed programs and policy maps of endpoints that no longer exist');
    const liveIPs = new Set(live.flatMap((e) => e.ips.map(lxcKey)));
    const liveCidrs = new Set([...liveIPs].map(hostCidrKey));
    const r = await this.maps.prune((table, key) => (table === LXC_MAP ? liveIPs.has(key) : table === IPCACHE_MAP && liveCidrs.has(key)));
    if (r.pruned) this.log.info(r, 'restore: removed map entries nobody desires');
    this.restored = true;
    return ids;
  }

  /**
   * Removes the programs (link pins, and the legacy filters that are theirs on the interfaces
   * `entries` and cellium_endpoints name), policy maps and shared-program entries and slots of
   * every endpoint ID found under the BPF root, in `entries` or in those maps that is not kept.
   * Returns those IDs.
   */
  private removeStalePrograms(keep: ReadonlySet<number>, entries: ReadonlyArray<readonly [string, LxcValue]>): number[] {
    const ifIndexes = new Map<number, Set<number>>();
    for (const [, v] of entries) ifIndexes.set(v.endpointId, (ifIndexes.get(v.endpointId) ?? new Set()).add(v.ifIndex));
    const sharedEntries = this.kernel.endpoints.entries();
    const stale = [...new Set([
      ...pinnedEndpoints(this.cfg.bpfRoot), ...this.kernel.pinnedPolicyMaps(), ...ifIndexes.keys(), ...sharedEntries.map(([, v]) => v.endpointId), ...this.kernel.policySlots.ids(),
    ])].filter((id) => !keep.has(id));
    for (const [ifIndex, v] of sharedEntries) if (!keep.has(v.endpointId)) ifIndexes.set(v.endpointId, (ifIndexes.get(v.endpointId) ?? new Set()).add(ifIndex));
    for (const id of stale) {
      try {
        for (const ifIndex of ifIndexes.get(id) ?? [0]) {
          unloadEndpointProgram(id, ifIndex, { bpfRoot: this.cfg.bpfRoot, removePolicyMap: false, owns: (prog) => this.loader.owns(prog, id, ifIndex) });
        }
        // the shared program's entries and slot of the endpoint, after its programs are detached
        for (const ifIndex of ifIndexes.get(id) ?? []) if (this.kernel.endpoints.get(ifIndex)?.endpointId === id) this.kernel.endpoints.delete(ifIndex);
        this.kernel.policySlots.delete(id);
        this.kernel.removePolicy(id);
        this.maps.groups?.forget(id);
      } catch (err) {
        this.log.warn({ endpointID: id, err: wrapBpf('program', `removing stale endpoint ${id}`, err).message }, 'could not remove a stale endpoint program');
      }
    }
    return stale.sort((a, b) => a - b);
  }

  /**
   * One prune round over every map (skipped until restore is done); also refreshes host addresses
   * and checks that every endpoint's programs are still attached (programsLost$ names those that
   * are not).
   */
  async prune(): Promise<{ pruned: number; repaired: number } | undefined> {
    if (!this.restored) return undefined;
    this.syncHostAddresses();
    const r = await this.maps.prune();
    if (r.pruned || r.repaired) this.log.info(r, 'BPF maps pruned and repaired');
    for (const lost of await this.loader.lostPrograms()) {
      this.log.warn({ endpointID: lost.id, why: lost.why }, "an endpoint's program is gone from its interface");
      this.lost.next({ endpointId: lost.id, why: lost.why });
    }
    return r;
  }

  /** See Datapath: the verdict bpf_lxc gives, computed from the kernel maps' contents. */
  async verdict(endpointId: number, direction: Direction, packet: PacketSpec | VerdictPacket): Promise<Verdict> {
    return kernelVerdict(this.cfg.bpfRoot, endpointId, direction, packet);
  }

  /** See Datapath: packets dropped per reason, from the kernel's counters (reasons with drops only). */
  async dropCounters(): Promise<Readonly<Record<string, number>>> {
    const out: Record<string, number> = {};
    for (const [reason, c] of Object.entries(this.kernel.dropCounters())) if (c.packets > 0) out[reason] = c.packets;
    return out;
  }
}
