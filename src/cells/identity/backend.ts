/**
 * Where global identities (label set -> number) are stored. The allocator decides numbers and
 * asks the backend to record them; a cluster-wide backend (etcd, like Cilium's kvstore allocator)
 * can refuse a number another node took, or answer with the number the label set already has.
 */
import type { Observable } from 'rxjs';
import { groupToken, token } from '../../hive/token.js';

/** One stored identity. */
export interface StoredIdentity {
  readonly id: number;
  /** Sorted `source:key=value` labels. */
  readonly labels: readonly string[];
  /**
   * A cluster-wide backend's identity this node held before its restart (the CiliumIdentity
   * backend's journal): taken by restored endpoints without asking the backend, which checks it
   * once it answers.
   */
  readonly held?: boolean;
}

/** A store of global identities. */
export interface IdentityBackend {
  /** Name for logs and status (`embedded`, `etcd`). */
  readonly name: string;
  /** Every stored identity. */
  load(): Promise<readonly StoredIdentity[]>;
  /**
   * Records `key` (the canonical label string) -> `id`. Returns the number stored for the key:
   * `id`, or the number the key already had; `undefined` when `id` belongs to another key. Once
   * `signal` aborts it rejects, and nothing it did stays recorded (a cluster-wide backend takes
   * back a claim that etcd committed after the abort).
   */
  claim(key: string, labels: readonly string[], id: number, signal?: AbortSignal): Promise<number | undefined>;
  /** Forgets a key (its last reference on this node was released); `id` is the number it had here. */
  remove(key: string, id?: number): Promise<void>;
  /** Waits for pending writes. */
  close(): Promise<void>;
  /**
   * A cluster-wide backend (etcd): identities other agents add and that disappear (GC), from its
   * watch. With it, the allocator mirrors every identity of the cluster, and releasing the last
   * reference only withdraws this node's claim (`remove`) instead of forgetting the identity.
   */
  readonly events$?: Observable<IdentityBackendEvent>;
  /** Whether a number is taken in the cluster (the allocator does not offer it). */
  isTaken?(id: number): boolean;
  /**
   * Numbers derive from the label set (the CiliumIdentity backend): the allocator offers a new
   * label set the number its hash names first, then the next ones free in its view, so agents
   * racing for one label set offer the same numbers and the store's create-only answers settle
   * it, instead of each agent creating its own number.
   */
  readonly hashedNumbers?: boolean;
}

/** An identity appearing or disappearing in a cluster-wide backend. */
export interface IdentityBackendEvent {
  readonly kind: 'upsert' | 'delete';
  readonly identity: StoredIdentity;
}

/** Where identities are kept cluster-wide (`--identity-allocation-mode`). */
export type IdentityAllocationMode = 'crd' | 'kvstore';

/**
 * A backend another cell offers: the kvstore cell's etcd backend (`kvstore`, with --kvstore=etcd),
 * the k8s-identity cell's CiliumIdentity backend (`crd`, with Kubernetes). The one of
 * --identity-allocation-mode wins, else any offered, else the embedded file. `create` is undefined
 * when the cell cannot offer one, and is called only for the chosen backend (nothing of the others
 * starts).
 */
export interface IdentityBackendChoice {
  readonly mode: IdentityAllocationMode;
  readonly create: (() => IdentityBackend) | undefined;
}

/** Value group of the backend choices (provideInto); empty in a single-node agent. */
export const IdentityBackendChoicesToken = groupToken<IdentityBackendChoice>('IdentityBackendChoices');

/** Token for the identity backend (the embedded one by default). */
export const IdentityBackendToken = token<IdentityBackend>('IdentityBackend');
