/**
 * BpfDatapath: the Datapath of `--datapath-mode=bpf`. Owns the kernel maps (KernelMaps), the
 * desired-state tables and their reconcilers (BpfMaps) and the program loader (BpfLoader). At start
 * it opens the pinned maps and writes the host's own addresses to the ipcache as the host identity
 * (unknown addresses resolve to world in the program). Pruning and the removal of programs and
 * maps left by endpoints that no longer exist wait until the endpoints were restored, so nothing a
 * restarting agent still owns is taken away while packets keep flowing.
 */
import { networkInterfaces } from 'node:os';
import { kernelVerdict, pinnedEndpoints, unloadEndpointProgram } from '../../bpf/index.js';
import type { Logger } from '../../hive/logger.js';
import { ReservedIdentity, type Datapath, type Direction, type PacketSpec, type Verdict } from '../datapath/types.js';
import type { CtTimeouts } from '../datapath/conntrack.js';
import type { VerdictPacket } from '../datapath/verdict-model.js';
import type { BpfDatapathConfig } from './config.js';
import { CtGarbageCollector } from './ct-gc.js';
import { wrapBpf } from './errors.js';
import { KernelMaps } from './kernel-maps.js';
import { BpfLoader } from './loader.js';
import { BpfMaps, type BpfMapsOptions } from './maps.js';

/** The host's own addresses as host CIDRs (`/32`, `/128`), IPv6 link-local ones left out. */
export function hostAddressCidrs(): string[] {
  const out = new Set<string>();
  for (const addrs of Object.values(networkInterfaces())) {
    for (const a of addrs ?? []) {
      if (a.family === 'IPv6' && /^fe80:/i.test(a.address)) continue;
      out.add(`${a.address.replace(/%.*$/, '')}/${a.family === 'IPv4' ? 32 : 128}`);
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
  private restored = false;

  constructor(
    readonly cfg: BpfDatapathConfig,
    private readonly log: Logger,
    opts: Omit<BpfMapsOptions, 'onError' | 'onEndpointDeleted'> & { readonly ctTimeouts?: CtTimeouts; readonly gcSliceMs?: number } = {},
  ) {
    this.kernel = new KernelMaps(cfg, (r) => log.warn(r, 'a pinned BPF map has another layout than this agent\'s: removed and created anew (its entries are lost)'));
    this.gc = new CtGarbageCollector(this.kernel, { intervalMs: cfg.conntrackGcInterval, maxIntervalMs: cfg.conntrackGcMaxInterval, sliceMs: opts.gcSliceMs });
    this.maps = new BpfMaps(this.kernel, {
      ...opts,
      onError: (table, key, err) => log.warn({ map: table, key, err: err.message }, 'BPF map write failed; retrying with backoff'),
      onEndpointDeleted: (ips) => void this.gc.scrub(ips),
    });
    this.loader = new BpfLoader(this.kernel, { mode: cfg.bpfAttachMode, ctTimeouts: opts.ctTimeouts });
    this.loader.setGate((c) => this.gc.settled([c.ipv4, c.ipv6]));
  }

  /** Opens the maps, starts the reconcilers and publishes the host's addresses. */
  start(): void {
    this.kernel.open();
    this.maps.start();
    this.syncHostAddresses();
    this.log.info({ bpfRoot: this.cfg.bpfRoot }, 'BPF datapath maps open');
  }

  /** Stops the reconcilers and closes the fds; programs and pinned maps stay in the kernel. */
  async stop(): Promise<void> {
    await this.gc.stop();
    await this.maps.stop();
    this.kernel.close();
  }

  /** Writes the host's addresses to the ipcache as the host identity; removes addresses that went away. */
  syncHostAddresses(): void {
    const now = new Set(hostAddressCidrs());
    for (const c of now) this.maps.upsertIPCache({ cidr: c, identity: ReservedIdentity.host });
    for (const c of this.hostCidrs) if (!now.has(c)) this.maps.deleteIPCache(c);
    this.hostCidrs = now;
  }

  /**
   * Called once the endpoints were restored: removes the programs (link pins, and legacy filters on
   * the interface cellium_lxc still names) and policy maps of endpoint IDs that are not among
   * `live`, scrubs the conntrack entries of their addresses, and turns pruning on (which then drops
   * their lxc entries). Returns the IDs removed.
   */
  async restoreDone(live: Iterable<number>): Promise<number[]> {
    const keep = new Set(live);
    // legacy filters have no pins: where a stale endpoint's program sits is in cellium_lxc
    const ifIndexOf = new Map<number, number>();
    const liveIfIndexes = new Set<number>();
    const staleIps: string[] = [];
    for (const [ip, v] of this.kernel.lxc.entries()) {
      if (keep.has(v.endpointId)) liveIfIndexes.add(v.ifIndex);
      else {
        ifIndexOf.set(v.endpointId, v.ifIndex);
        staleIps.push(ip);
      }
    }
    // connections of endpoints deleted while the agent was down: their addresses may be reused
    void this.gc.scrub(staleIps);
    const stale = new Set([...pinnedEndpoints(this.cfg.bpfRoot), ...this.kernel.pinnedPolicyMaps(), ...ifIndexOf.keys()].filter((id) => !keep.has(id)));
    for (const id of stale) {
      const ifIndex = ifIndexOf.get(id) ?? 0;
      try {
        unloadEndpointProgram(id, liveIfIndexes.has(ifIndex) ? 0 : ifIndex, { bpfRoot: this.cfg.bpfRoot, removePolicyMap: false });
        this.kernel.removePolicy(id);
      } catch (err) {
        this.log.warn({ endpointID: id, err: wrapBpf('program', `removing stale endpoint ${id}`, err).message }, 'could not remove a stale endpoint program');
      }
    }
    if (stale.size) this.log.info({ endpointIDs: [...stale] }, 'removed programs and policy maps of endpoints that no longer exist');
    this.restored = true;
    return [...stale].sort((a, b) => a - b);
  }

  /** One prune round over every map (skipped until restore is done); also refreshes host addresses. */
  async prune(): Promise<{ pruned: number; repaired: number } | undefined> {
    if (!this.restored) return undefined;
    this.syncHostAddresses();
    const r = await this.maps.prune();
    if (r.pruned || r.repaired) this.log.info(r, 'BPF maps pruned and repaired');
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
