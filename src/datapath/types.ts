/**
 * The datapath boundary: what endpoint regeneration asks of the datapath. Two implementations
 * exist behind the same token: the in-memory datapath (unprivileged runs and unit tests) and the
 * BPF datapath (real programs and maps in the kernel). `--datapath-mode=auto|bpf|memory` picks one.
 */
import type { Observable } from 'rxjs';
import { token } from '../hive/token.js';
import type { LBMapSet } from './lb-maps.js';

/** Traffic direction, seen from the endpoint. */
export type Direction = 'ingress' | 'egress';

/** IP protocol numbers used in policy keys; 0 means any protocol. */
export const Proto = { ANY: 0, ICMP: 1, TCP: 6, UDP: 17, ICMPV6: 58, SCTP: 132 } as const;

/** Reserved numeric identities (Cilium's numbers). */
export const ReservedIdentity = {
  unknown: 0, host: 1, world: 2, unmanaged: 3, health: 4, init: 5, remoteNode: 6,
  kubeApiserver: 7, ingress: 8, worldIPv4: 9, worldIPv6: 10,
} as const;

/**
 * One entry of an endpoint's policy map state, as the control plane computes it.
 * identity 0 = any identity; protocol 0 = any protocol (then port must be 0); port 0 = any port.
 * `endPort` (inclusive, >= port) turns the entry into a port range. `deny` entries drop.
 * The datapath expands ranges into LPM prefixes (see src/maps/policy/key.ts) and looks up the most specific
 * entry for the peer's identity and for identity 0; a deny from either lookup drops, otherwise any
 * match allows, otherwise the packet drops. "Allow all in a direction" is the entry
 * {identity 0, protocol 0, port 0} in that direction.
 */
export interface PolicyEntry {
  readonly identity: number;
  readonly direction: Direction;
  readonly protocol: number;
  readonly port: number;
  readonly endPort?: number;
  readonly deny: boolean;
}

/** The per-endpoint constants a program is loaded with (Cilium's ep_config.h values). */
export interface EndpointDatapathConfig {
  readonly id: number;
  readonly identity: number;
  readonly ipv4?: string;
  readonly ipv6?: string;
  /** Host-side interface name (lxc…). */
  readonly ifName: string;
  /** Host-side interface index. */
  readonly ifIndex: number;
  /** The container-side MAC (eth0 in the pod). */
  readonly mac: string;
  /** The host-side MAC (lxc… on the host). */
  readonly hostMac: string;
  /** Endpoint options (Cilium's per-endpoint option defines, e.g. `{ Debug: 'Enabled' }`); absent = defaults. */
  readonly options?: Readonly<Record<string, string>>;
}

/** An entry of the shared endpoints map (`cellium_lxc`): IP -> local endpoint. */
export interface LxcEntry {
  readonly ip: string;
  readonly endpointId: number;
  readonly ifIndex: number;
  readonly identity: number;
  readonly mac: string;
}

/** An entry of the ipcache (`cellium_ipcache`): CIDR (or /32, /128 host address) -> identity. */
export interface IPCacheEntry {
  readonly cidr: string;
  readonly identity: number;
}

/** Reconciliation status of one desired object or a whole table. */
export interface ReconcileStatus {
  readonly state: 'pending' | 'done' | 'error';
  readonly message?: string;
  readonly updatedAt: string;
}

/** A map as listed by `GET /map` and `GET /map/{name}`. */
export interface MapDump {
  readonly name: string;
  readonly path?: string;
  readonly status: ReconcileStatus;
  readonly entries: readonly { readonly key: string; readonly value: string }[];
}

/** A map's name and how many entries it holds (desired entries for the BPF datapath). */
export interface MapSummary {
  readonly name: string;
  readonly size: number;
}

/** Verdict for one packet. */
export interface Verdict {
  readonly allowed: boolean;
  /**
   * Drop reason when not allowed: 'policy' (no match), 'policy-deny' (a deny entry),
   * 'ct-insert-failed' (a new connection's conntrack entry could not be written), 'no-service' (a
   * port a service VIP does not have), 'no-backend' (a service without backends for new flows),
   * 'invalid-source' (the pod sent it from an address that is not its own).
   */
  readonly reason?: 'policy' | 'policy-deny' | 'ct-insert-failed' | 'no-service' | 'no-backend' | 'invalid-source';
  /** Identity the peer address resolved to (after service translation: the backend's). */
  readonly peerIdentity: number;
  /**
   * A dropped packet whose sender is answered with an ICMP port unreachable (a service without
   * backends under --service-no-backend-response=reject); absent when the drop is silent.
   */
  readonly rejected?: true;
  /**
   * Service translation: an egress packet to `frontend` went to `backend` (DNAT), or a reply from
   * `backend` has its source rewritten to `frontend` (rev-NAT). Absent for other packets.
   */
  readonly service?: { readonly frontend: string; readonly backend: string; readonly revNat: number };
}

/** A packet as the verdict function sees it. */
export interface PacketSpec {
  readonly src: string;
  readonly dst: string;
  readonly protocol: number;
  readonly dport: number;
}

/** Loads and attaches the per-endpoint program (`bpf_lxc`). */
export interface Loader {
  /** rewrite+load: load the program with `cfg` as constants and attach it, replacing the old one atomically. */
  reloadEndpoint(cfg: EndpointDatapathConfig, signal?: AbortSignal): Promise<void>;
  /** Detach the endpoint's program and remove its per-endpoint maps. Missing things are not errors. */
  unloadEndpoint(id: number, ifName: string): Promise<void>;
  /**
   * Whether the endpoint's program is attached with exactly this configuration. A true answer
   * also makes the loader watch those programs (checkAttached), as if it had attached them.
   */
  isLoaded(cfg: EndpointDatapathConfig): Promise<boolean>;
  /**
   * Why the programs this loader last attached (or verified) for the endpoint are no longer
   * attached (detached or replaced behind the agent's back, the interface gone), or undefined
   * when they are; undefined too for an endpoint never loaded here or with a load in progress.
   */
  checkAttached(id: number): Promise<string | undefined>;
}

/** An endpoint whose programs were found gone from its interface. */
export interface LostProgram {
  readonly endpointId: number;
  /** What is missing, e.g. `its program from_container (id 812) is no longer attached at tc ingress of lxc1a2b…`. */
  readonly why: string;
}

/** An endpoint restore brought back: its ID and IPs (what the stale-state cleanup must keep). */
export interface LiveEndpoint {
  readonly id: number;
  readonly ips: readonly string[];
}

/** The datapath maps as the control plane sees them: desired state in, reconciled to the kernel. */
export interface DatapathMaps {
  /** Desired lxc entries for one endpoint (replaces that endpoint's previous ones). */
  setEndpoint(endpointId: number, entries: readonly LxcEntry[]): void;
  /** Removes every lxc entry of an endpoint. */
  deleteEndpoint(endpointId: number): void;
  /** Desired ipcache entry. */
  upsertIPCache(entry: IPCacheEntry): void;
  /** Removes an ipcache entry by CIDR. */
  deleteIPCache(cidr: string): void;
  /** Desired policy map state of one endpoint (full replacement; only the difference is written). */
  setPolicy(endpointId: number, entries: readonly PolicyEntry[]): void;
  /** Removes the policy map of an endpoint. */
  deletePolicy(endpointId: number): void;
  /**
   * Resolves once everything desired so far is written (or failed); returns the failures that
   * stand: with `endpointId`, those of that endpoint's entries (its policy map, its lxc and ipcache
   * entries); without, all of them.
   */
  flush(signal?: AbortSignal, endpointId?: number): Promise<readonly string[]>;
  /** Lists the maps with their reconciliation status. */
  list(): Promise<readonly MapDump[]>;
  /** Name and entry count of every map, without reading the entries (the status API's periodic probe). */
  summary(): Promise<readonly MapSummary[]>;
  /** One map with its real contents (kernel contents for the BPF datapath). */
  get(name: string): Promise<MapDump | undefined>;
}

/** Whether a host-side interface exists (endpoint GC and restore). */
export type LinkChecker = (ifName: string) => Promise<boolean>;

/** Token for the LinkChecker of the selected datapath. */
export const LinkCheckerToken = token<LinkChecker>('LinkChecker');

/** Where a datapath's monitor events are read: the program's ring buffer and its lost counter. */
export interface MonitorEventSource {
  /** The BPF root the ring buffer (`cellium_events`) is pinned under. */
  readonly bpfRoot: string;
  /** Events the ring buffer had no room for so far (the program counts them). */
  eventsLost(): number;
}

/** The selected datapath. */
export interface Datapath {
  readonly mode: 'memory' | 'bpf';
  readonly loader: Loader;
  readonly maps: DatapathMaps;
  /** Evaluates a packet against the current maps exactly as the program does (memory mode; BPF mode reads the kernel maps). */
  verdict(endpointId: number, direction: Direction, packet: PacketSpec): Promise<Verdict>;
  /** Drop counters by reason, as the program counts them. */
  dropCounters(): Promise<Readonly<Record<string, number>>>;
  /**
   * Whether `ip` is one of the node's own addresses (the host identity in the ipcache): no endpoint
   * may hold it. Absent when the datapath gives no address the host identity (memory).
   */
  isHostAddress?(ip: string): boolean | Promise<boolean>;
  /** Where its monitor events are read (BPF); absent when the datapath reports none (memory). */
  readonly monitorEvents?: MonitorEventSource;
  /** The datapath's own load-balancing maps (the memory datapath's); absent: the loadbalancer cell opens the kernel's. */
  readonly lbMaps?: LBMapSet;
  /**
   * Endpoints whose programs the datapath's periodic check found gone from their interface (BPF:
   * each prune); the endpoint cell marks them and reloads them. Absent when nothing can vanish.
   */
  readonly programsLost$?: Observable<LostProgram>;
  /**
   * Restore, step 1 (BPF: state that outlived the agent). Called once the endpoints restored from
   * the state directory hold their IDs and before any new endpoint can be created: removes the
   * programs, policy maps, cellium_lxc entries and their ipcache entries of every endpoint that is
   * not among `live` (creations a crash interrupted, endpoints restore dropped). Returns the IDs removed.
   */
  removeStale?(live: readonly LiveEndpoint[]): Promise<number[]>;
  /**
   * Restore, step 2. Called once the restored endpoints were regenerated, before the agent reports
   * ready: what is left that nobody desires is removed (the IPs of `live` endpoints excepted) and
   * periodic pruning starts. Returns the IDs whose programs were removed.
   */
  restoreDone?(live: readonly LiveEndpoint[]): Promise<number[]>;
}

/** Token for the selected datapath. */
export const DatapathToken = token<Datapath>('Datapath');
