/**
 * The datapath's kernel maps, open for the agent's lifetime: cellium_lxc and cellium_ipcache
 * (sized by the configuration), the four global conntrack maps (sized by the configuration; a
 * pinned one of another layout is recreated and logged, its entries lost rather than misread) and
 * their counters (cellium_ct_stats), the
 * endpoints' policy maps (opened or created on first use and kept open, so the loader binds the
 * program to the very map the reconciler writes), the traffic counters (cellium_metrics) and the
 * monitor's ring buffer (cellium_events), and the shared bpf_lxc's cellium_endpoints and
 * cellium_policy_maps; cellium_metrics and cellium_events are opened or created here too, so a pinned
 * one of an older layout is replaced before any program is loaded against it. Everything is pinned
 * under the BPF root, so it outlives the agent.
 */
import { join } from 'node:path';
import { existsSync, readdirSync, renameSync } from 'node:fs';
import { BpfMap, ensureBpffs } from '../../bpf/index.js';
import { CtMaps, OBJECT_POLICY_MAP, POLICY_MAP_SPEC, PolicyMapsMap, openEndpointsMap, type EndpointsMap, EVENTS_MAP, EVENTS_MAP_SPEC, METRICS_MAP, METRICS_MAP_SPEC, openIPCacheMap, openLxcMap, openPolicyMap, policyMapPath, readTraffic, removePolicyMap, type IPCacheMap, type LxcMap, type MapReplacement, type PolicyMap, type TrafficCounters } from '../../maps/index.js';
import { endpointOfPolicyMap } from '../../datapath/map-names.js';
import type { BpfDatapathConfig } from '../../datapath/bpf-config.js';
import { BpfDatapathError, wrapBpf } from './errors.js';

/** The open kernel maps. */
export class KernelMaps {
  private lxcMap?: LxcMap;
  private ipcacheMap?: IPCacheMap;
  private ctMaps?: CtMaps;
  private metricsMap?: BpfMap;
  private eventsMap?: BpfMap;
  private endpointsMap?: EndpointsMap;
  private policyMapsMap?: PolicyMapsMap;
  private readonly policyMaps = new Map<number, PolicyMap>();

  constructor(
    private readonly cfg: Pick<BpfDatapathConfig, 'bpfRoot' | 'bpfPolicyMapMax' | 'bpfLxcMapMax' | 'bpfIpcacheMapMax' | 'bpfCtGlobalTcpMax' | 'bpfCtGlobalAnyMax'>,
    /** Told when a pinned map had another layout and was recreated (its entries are gone). */
    private readonly onReplace: (r: MapReplacement) => void = () => undefined,
  ) {}

  /** Entries of each policy map (the configured size). */
  get policyMapMax(): number {
    return this.cfg.bpfPolicyMapMax;
  }

  /** The BPF root. */
  get root(): string {
    return this.cfg.bpfRoot;
  }

  /** Mounts bpffs when needed and opens (or creates) the shared maps with the configured sizes. */
  open(): void {
    try {
      ensureBpffs(this.cfg.bpfRoot);
      this.lxcMap = openLxcMap(this.cfg.bpfRoot, this.cfg.bpfLxcMapMax);
      this.ipcacheMap = openIPCacheMap(this.cfg.bpfRoot, this.cfg.bpfIpcacheMapMax);
      this.ctMaps = CtMaps.open(this.cfg.bpfRoot, { tcp: this.cfg.bpfCtGlobalTcpMax, any: this.cfg.bpfCtGlobalAnyMax }, this.onReplace);
      this.metricsMap = BpfMap.openOrCreate(join(this.cfg.bpfRoot, METRICS_MAP), METRICS_MAP_SPEC);
      this.eventsMap = BpfMap.openOrCreate(join(this.cfg.bpfRoot, EVENTS_MAP), EVENTS_MAP_SPEC);
      this.endpointsMap = openEndpointsMap(this.cfg.bpfRoot);
      this.policyMapsMap = PolicyMapsMap.open(this.cfg.bpfRoot);
    } catch (err) {
      this.close();
      throw wrapBpf('map', `opening the datapath maps under ${this.cfg.bpfRoot}`, err);
    }
  }

  /** Closes every fd (the pinned maps stay). */
  close(): void {
    this.lxcMap?.close();
    this.ipcacheMap?.close();
    this.ctMaps?.close();
    this.metricsMap?.close();
    this.eventsMap?.close();
    this.endpointsMap?.close();
    this.policyMapsMap?.close();
    this.lxcMap = this.ipcacheMap = this.ctMaps = this.metricsMap = this.eventsMap = this.endpointsMap = this.policyMapsMap = undefined;
    for (const m of this.policyMaps.values()) m.close();
    this.policyMaps.clear();
  }

  /** cellium_lxc. */
  get lxc(): LxcMap {
    if (!this.lxcMap) throw new BpfDatapathError('not-started', 'the BPF datapath maps are not open (the datapath has not started)');
    return this.lxcMap;
  }

  /** cellium_ipcache. */
  get ipcache(): IPCacheMap {
    if (!this.ipcacheMap) throw new BpfDatapathError('not-started', 'the BPF datapath maps are not open (the datapath has not started)');
    return this.ipcacheMap;
  }

  /** The shared bpf_lxc's endpoints (cellium_endpoints, by host interface index). */
  get endpoints(): EndpointsMap {
    if (!this.endpointsMap) throw new BpfDatapathError('not-started', 'the BPF datapath maps are not open (the datapath has not started)');
    return this.endpointsMap;
  }

  /** The shared bpf_lxc's policy maps (cellium_policy_maps, by endpoint ID). */
  get policySlots(): PolicyMapsMap {
    if (!this.policyMapsMap) throw new BpfDatapathError('not-started', 'the BPF datapath maps are not open (the datapath has not started)');
    return this.policyMapsMap;
  }

  /** The global conntrack maps. */
  get ct(): CtMaps {
    if (!this.ctMaps) throw new BpfDatapathError('not-started', 'the BPF datapath maps are not open (the datapath has not started)');
    return this.ctMaps;
  }

  /** An endpoint's policy map, opened (or created with the configured size) and kept open. */
  policy(endpointId: number): PolicyMap {
    let m = this.policyMaps.get(endpointId);
    if (m && !existsSync(policyMapPath(this.cfg.bpfRoot, endpointId))) {
      // unpinned behind our back (by hand, or by a crash cleanup): start over with a pinned map
      m.close();
      this.policyMaps.delete(endpointId);
      m = undefined;
    }
    if (!m) {
      try {
        m = openPolicyMap(this.cfg.bpfRoot, endpointId, this.cfg.bpfPolicyMapMax);
      } catch (err) {
        throw wrapBpf('map', `opening the policy map of endpoint ${endpointId}`, err);
      }
      this.policyMaps.set(endpointId, m);
    }
    return m;
  }

  /**
   * An endpoint's policy map when it is pinned (never creates one). With `asIs` the pinned map is
   * opened whatever its size (a shared policy map, whose pin is only a view, is never resized).
   */
  existingPolicy(endpointId: number, asIs = false): PolicyMap | undefined {
    if (!existsSync(policyMapPath(this.cfg.bpfRoot, endpointId))) {
      this.forgetPolicy(endpointId);
      return undefined;
    }
    if (!asIs) return this.policy(endpointId);
    let m = this.policyMaps.get(endpointId);
    if (!m) {
      try {
        m = openPolicyMap(this.cfg.bpfRoot, endpointId);
      } catch (err) {
        throw wrapBpf('map', `opening the policy map of endpoint ${endpointId}`, err);
      }
      this.policyMaps.set(endpointId, m);
    }
    return m;
  }

  /**
   * Pins `map` as endpoint `endpointId`'s policy map (`cellium_policy_<id>`), replacing what was
   * pinned there (pinned beside, then renamed over: the name never goes missing). Several
   * endpoints' names may pin one map (a shared policy map).
   */
  pinPolicy(endpointId: number, map: BpfMap): void {
    const path = policyMapPath(this.cfg.bpfRoot, endpointId);
    const pending = `${path}_new`; // bpffs refuses names with a dot
    this.forgetPolicy(endpointId);
    try {
      try {
        map.pin(pending);
      } catch (err) {
        if ((err as { code?: string }).code !== 'EEXIST') throw err;
        BpfMap.unpin(pending); // left by a crash between the pin and the rename
        map.pin(pending);
      }
      renameSync(pending, path);
    } catch (err) {
      BpfMap.unpin(pending);
      throw wrapBpf('map', `pinning the policy map of endpoint ${endpointId}`, err);
    }
  }

  /** The kernel id of the map pinned as endpoint `endpointId`'s policy map, or undefined when none is. */
  pinnedPolicyId(endpointId: number): number | undefined {
    const path = policyMapPath(this.cfg.bpfRoot, endpointId);
    if (!existsSync(path)) return undefined;
    try {
      const m = BpfMap.openPinned(path);
      const id = m.info.id;
      m.close();
      return id;
    } catch (err) {
      if ((err as { code?: string }).code === 'ENOENT') return undefined;
      throw wrapBpf('map', `opening the policy map of endpoint ${endpointId}`, err);
    }
  }

  /** Closes and unpins an endpoint's policy map; false when it was not pinned. */
  removePolicy(endpointId: number): boolean {
    this.forgetPolicy(endpointId);
    return removePolicyMap(this.cfg.bpfRoot, endpointId);
  }

  /**
   * Per-endpoint programs (each writes its own cellium_policy_<id>) after a run with shared policy
   * maps: every endpoint whose pinned policy map is also another endpoint's (its pin or its slot in
   * cellium_policy_maps) gets a copy of its own with the same entries, pinned over the shared name,
   * so writing one endpoint's policy never changes another's. Returns the endpoints given a copy.
   */
  unsharePolicyPins(): number[] {
    const holders = new Map<number, Set<number>>();
    const hold = (mapId: number | undefined, id: number): void => {
      if (mapId !== undefined) holders.set(mapId, (holders.get(mapId) ?? new Set()).add(id));
    };
    const pinned = new Map<number, number>();
    for (const id of this.pinnedPolicyMaps()) {
      const mapId = this.pinnedPolicyId(id);
      if (mapId === undefined) continue;
      pinned.set(id, mapId);
      hold(mapId, id);
    }
    for (const id of this.policySlots.ids()) hold(this.policySlots.get(id), id);
    const copied: number[] = [];
    for (const [id, mapId] of pinned) {
      if ((holders.get(mapId)?.size ?? 0) < 2) continue;
      const shared = BpfMap.openPinned(policyMapPath(this.cfg.bpfRoot, id));
      try {
        const { count, keys, values } = shared.lookupAll();
        const own = BpfMap.create({ ...POLICY_MAP_SPEC, name: OBJECT_POLICY_MAP, maxEntries: this.cfg.bpfPolicyMapMax });
        try {
          own.updateBatch(keys, values, count);
          this.pinPolicy(id, own);
        } finally {
          own.close();
        }
      } finally {
        shared.close();
      }
      copied.push(id);
    }
    return copied;
  }

  /** Endpoint IDs that have a policy map pinned under the root. */
  pinnedPolicyMaps(): number[] {
    if (!existsSync(this.cfg.bpfRoot)) return [];
    return readdirSync(this.cfg.bpfRoot).map(endpointOfPolicyMap).filter((id): id is number => id !== undefined).sort((a, b) => a - b);
  }

  /** Drop counters by reason (cellium_metrics, both directions, summed over CPUs). */
  dropCounters(): Record<string, { packets: number; bytes: number }> {
    const out: Record<string, { packets: number; bytes: number }> = {};
    for (const d of this.traffic().drops) {
      const cur = out[d.reason!] ?? { packets: 0, bytes: 0 };
      out[d.reason!] = { packets: cur.packets + d.packets, bytes: cur.bytes + d.bytes };
    }
    return out;
  }

  /** Every traffic counter of cellium_metrics: drops by reason and direction, forwards, events lost. */
  traffic(): TrafficCounters {
    return readTraffic(this.shared('metricsMap'));
  }

  /** The fds of cellium_metrics and cellium_events by name, for the loader to bind programs to. */
  sharedFds(): Record<string, number> {
    return { [METRICS_MAP]: this.shared('metricsMap').fd, [EVENTS_MAP]: this.shared('eventsMap').fd };
  }

  /** The ids of cellium_metrics and cellium_events (a program bound to others must be reloaded). */
  sharedIds(): number[] {
    return [this.shared('metricsMap').info.id, this.shared('eventsMap').info.id];
  }

  private shared(which: 'metricsMap' | 'eventsMap'): BpfMap {
    const m = this[which];
    if (!m) throw new BpfDatapathError('not-started', 'the BPF datapath maps are not open (the datapath has not started)');
    return m;
  }

  private forgetPolicy(endpointId: number): void {
    this.policyMaps.get(endpointId)?.close();
    this.policyMaps.delete(endpointId);
  }
}
