/**
 * The load-balancing maps as both datapaths hold them (Cilium's bpf/lib/lb.h): the services map
 * (frontend + backend slot -> backend ID, or for slot 0 the master entry with the backend count),
 * the backends map (ID -> address), reverse NAT (rev-NAT index -> frontend address), Maglev lookup
 * tables (rev-NAT index -> backend IDs) and the affinity match map (backend of an affinity
 * service). This is the contract: the kernel maps (src/maps/lb) and the in-memory ones
 * (src/datapath/memory/lb-maps.ts) implement the same set, so the writer and the verdict model see
 * one shape.
 */
import { token } from '../hive/token.js';

/** Key of a services map entry (struct lb4_key / lb6_key). */
export interface LBServiceKey {
  readonly address: string;
  /** Destination port; 0 with proto 0 is the wildcard entry of a VIP. */
  readonly port: number;
  /** 0 the master entry, 1.. the backend slots. */
  readonly slot: number;
  /** IP protocol number (6 TCP, 17 UDP, 0 any). */
  readonly proto: number;
  /** LB_LOOKUP_SCOPE_EXT (0) or LB_LOOKUP_SCOPE_INT (1). */
  readonly scope: number;
}

/** Value of a services map entry (struct lb4_service). */
export interface LBServiceValue {
  /** Backend ID (slots), or the affinity timeout in seconds (master entry). */
  readonly backendId: number;
  /** Master entry: slots of backends that take new flows (1..count). */
  readonly count: number;
  /** Master entry: slots after them of backends that keep only their flows (terminating, quarantined, maintenance). */
  readonly qcount: number;
  readonly revNat: number;
  readonly flags: number;
  readonly flags2: number;
}

/** Value of a backends map entry (struct lb4_backend / lb6_backend). */
export interface LBBackendValue {
  readonly address: string;
  readonly port: number;
  readonly proto: number;
  /** BE_STATE_* */
  readonly flags: number;
  readonly clusterId: number;
  readonly zone: number;
}

/** Value of a reverse-NAT entry: the frontend address replies are rewritten to. */
export interface LBRevNatValue {
  readonly address: string;
  readonly port: number;
}

/** Key of the affinity match map (struct lb_affinity_match). */
export interface LBAffinityMatchKey {
  readonly backendId: number;
  readonly revNat: number;
}

/** Backend states in the backend's flags (Cilium's BE_STATE_*). */
export const BackendFlag = { active: 0, terminating: 1, quarantined: 2, maintenance: 3 } as const;

/** Service flags (SVC_FLAG_*) of the master entry's `flags`. */
export const SvcFlag = {
  externalIp: 1 << 0, nodePort: 1 << 1, extLocalScope: 1 << 2, hostPort: 1 << 3, affinity: 1 << 4,
  loadBalancer: 1 << 5, routable: 1 << 6, sourceRange: 1 << 7,
} as const;

/** Service flags of `flags2` (SVC_FLAG_*; noBackendDrop is Cellium's: --service-no-backend-response=drop). */
export const SvcFlag2 = { localRedirect: 1 << 0, nat46x64: 1 << 1, l7LoadBalancer: 1 << 2, loopback: 1 << 3, intLocalScope: 1 << 4, twoScopes: 1 << 5, noBackendDrop: 1 << 6 } as const;

/** Lookup scopes of the services key. */
export const LBScopeCode = { external: 0, internal: 1 } as const;

/** One map of the set: batched writes and deletes, reads. Throws on a failed operation. */
export interface LBMap<K, V> {
  readonly name: string;
  get(key: K): V | undefined;
  set(entries: readonly (readonly [K, V])[]): void;
  delete(keys: readonly K[]): void;
  entries(): [K, V][];
}

/** The load-balancing maps of one datapath. */
export interface LBMapSet {
  readonly services4: LBMap<LBServiceKey, LBServiceValue>;
  readonly services6: LBMap<LBServiceKey, LBServiceValue>;
  readonly backends4: LBMap<number, LBBackendValue>;
  readonly backends6: LBMap<number, LBBackendValue>;
  readonly revNat4: LBMap<number, LBRevNatValue>;
  readonly revNat6: LBMap<number, LBRevNatValue>;
  /** rev-NAT index -> the Maglev lookup table (backend IDs). */
  readonly maglev4: LBMap<number, Uint32Array>;
  readonly maglev6: LBMap<number, Uint32Array>;
  readonly affinityMatch: LBMap<LBAffinityMatchKey, number>;
  /**
   * Names of the maps opening them replaced (pinned by an earlier run with another size or
   * layout): programs loaded before still hold the old ones. Absent for maps never pinned.
   */
  readonly replaced?: readonly string[];
}

/** Token for the selected datapath's LB maps. */
export const LBMapsToken = token<LBMapSet>('LBMaps');

/** The names of the maps (Cilium's, prefixed cellium_). */
export const LB_MAP_NAMES = {
  services4: 'cellium_lb4_services', services6: 'cellium_lb6_services',
  backends4: 'cellium_lb4_backends', backends6: 'cellium_lb6_backends',
  revNat4: 'cellium_lb4_reverse_nat', revNat6: 'cellium_lb6_reverse_nat',
  maglev4: 'cellium_lb4_maglev', maglev6: 'cellium_lb6_maglev',
  affinity4: 'cellium_lb4_affinity', affinity6: 'cellium_lb6_affinity',
  affinityMatch: 'cellium_lb_affinity_match',
} as const;

/** A services key as text (`10.96.0.10:80/6 slot 0 scope 0`), for messages and tests. */
export function serviceKeyText(k: LBServiceKey): string {
  return `${k.address.includes(':') ? `[${k.address}]` : k.address}:${k.port}/${k.proto} slot ${k.slot} scope ${k.scope}`;
}
