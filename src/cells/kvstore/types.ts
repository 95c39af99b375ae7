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
  session(): Promise<Lease>;
  /** Emits after a lost session lease was replaced: owners of leased keys put them again. */
  readonly sessionRenewed$: Observable<void>;
  /** The last probe's status. */
  status(): KVStoreStatus;
  /** Whether the last probe reached etcd. */
  connected(): boolean;
}

/** Token for the kvstore. */
export const KVStoreToken = token<KVStore>('KVStore');

/** Cilium's key prefixes. */
export const KEYS = {
  identitiesId: 'cilium/state/identities/v1/id/',
  identitiesValue: 'cilium/state/identities/v1/value/',
  identitiesLocks: 'cilium/state/identities/v1/locks/',
  ip: 'cilium/state/ip/v1/default/',
  nodes: 'cilium/state/nodes/v1/',
} as const;
