/**
 * The kvstore: the agent's connection to etcd (Cilium's kvstore mode), its session lease and status.
 * Other cells use it through this file or index.ts.
 */
import type { Etcd3, Lease } from 'etcd3';
import type { Observable } from 'rxjs';
import { token } from '../../hive/token.js';
import type { KVStoreConfig } from './config.js';

/** Cilium's component status (StatusResponse `kvstore`). */
export interface KVStoreStatus {
  readonly state: 'Ok' | 'Warning' | 'Failure' | 'Disabled';
  readonly msg: string;
}

/** The kvstore as the other cells see it. */
export interface KVStore {
  /** Whether the agent runs with a kvstore (`--kvstore=etcd`). */
  readonly enabled: boolean;
  readonly config: KVStoreConfig;
  /** The etcd client; throws when the kvstore is disabled. */
  readonly etcd: Etcd3;
  /**
   * The session lease of this agent (granted on first use, granted anew when lost): keys put with
   * it are deleted by etcd one TTL after the agent stops renewing it.
   */
  session(signal?: AbortSignal): Promise<Lease>;
  /** Emits after a lost session lease was replaced: owners of leased keys put them again. */
  readonly sessionRenewed$: Observable<void>;
  /** The last probe's status. */
  status(): KVStoreStatus;
  /** Whether the last probe reached etcd. */
  connected(): boolean;
  /** Whether `lease` is the current session lease (a write under an older one goes with it). */
  isCurrent(lease: Lease): boolean;
  /**
   * The value of the store's epoch key (`cilium/.epoch`) as last read: it changes when etcd was
   * wiped (undefined before the first probe). Writes that rely on the mirrors compare it.
   */
  epoch(): Promise<string>;
  /** Registers a mirror with the probe (verified every probe, listed again when the store was reset); returns its removal. */
  addMirror(m: MirrorHandle): () => void;
}

/** A mirrored prefix as the kvstore's probe sees it (PrefixMirror). */
export interface MirrorHandle {
  readonly prefix: string;
  /** Checks the copy against etcd; returns why it cannot be trusted (starting with `wrong: ` when it differs from the store), or undefined. */
  verify(): Promise<string | undefined>;
  /** Lists the prefix again (the copy cannot be trusted: `reason`; `wrong`: it is known to differ from the store). */
  resync(reason: string, wrong?: boolean): Promise<void>;
  status(): MirrorStatus;
}

/** The state of one mirror, for `cellium status` and the health tree. */
export interface MirrorStatus {
  readonly prefix: string;
  /** The store revision the copy reflects. */
  readonly revision: number;
  readonly keys: number;
  /** `starting`: not listed yet (its cell has not started it); `resyncing`: being listed again. */
  readonly state: 'starting' | 'watching' | 'resyncing';
  /** When the copy was last found equal to etcd (a list, or a verification). */
  readonly verifiedAt?: number;
  /** When the copy last changed. */
  readonly changedAt?: number;
  /** Why the last resync was needed. */
  readonly reason?: string;
}

/** Token for the kvstore. */
export const KVStoreToken = token<KVStore>('KVStore');

/** Cilium's key prefixes. */
export const KEYS = {
  identitiesId: 'cilium/state/identities/v1/id/',
  identitiesValue: 'cilium/state/identities/v1/value/',
  identitiesLocks: 'cilium/state/identities/v1/locks/',
  /** Cellium's own: `<sorted labels>` -> the one ID of the label set (see identity-backend.ts). */
  identitiesLabels: 'cilium/state/identities/v1/labels/',
  ip: 'cilium/state/ip/v1/default/',
  nodes: 'cilium/state/nodes/v1/',
  /** A random value created once per store: a new value means etcd was wiped (see docs/cells/kvstore.md). */
  epoch: 'cilium/.epoch',
} as const;
