/**
 * IdentityAllocator: labels -> numeric security identity (Cilium's numbers and ranges).
 * Reserved 1..10, global (endpoint) identities 256..65535, local CIDR identities in the 1<<24 scope.
 */
import type { Observable } from 'rxjs';
import { token } from '../../hive/token.js';
import type { Label } from '../../lib/labels.js';

/** A security identity. `labels` are sorted `source:key=value` strings. */
export interface Identity {
  readonly id: number;
  readonly labels: readonly string[];
  /** Parsed labels, same order. */
  readonly labelSet: readonly Label[];
  readonly reserved: boolean;
}

/** An identity appearing or disappearing (last reference released or GC'd). */
export interface IdentityChange {
  readonly kind: 'add' | 'delete';
  readonly identity: Identity;
}

/** The allocator's ranges, for the status API. */
export interface IdentityRange {
  readonly minGlobal: number;
  readonly maxGlobal: number;
  readonly localScope: number;
}

/** Options of allocate and allocateCIDR. */
export interface AllocateOptions {
  /**
   * The number to give a label set that has none yet, when it is free and in range (restore: an
   * endpoint's or a CIDR's number from before the restart, so the pinned maps that name it stay
   * right). A label set that has a number keeps it.
   */
  readonly prefer?: number;
}

/** Allocates, references and releases identities. */
export interface IdentityAllocator {
  /** Returns the identity of a label set (same sorted set -> same id), taking a reference. */
  allocate(labels: readonly Label[], opts?: AllocateOptions): Promise<{ identity: Identity; isNew: boolean }>;
  /** Drops a reference; returns true when that was the last one and the identity was freed. */
  release(id: number): Promise<boolean>;
  /** A local identity for a CIDR (1<<24 scope), reference counted like allocate. */
  allocateCIDR(cidr: string, opts?: AllocateOptions): Promise<Identity>;
  /** Looks an identity up by number (reserved ones included). */
  lookup(id: number): Identity | undefined;
  /** Looks an identity up by its label set. */
  lookupByLabels(labels: readonly Label[]): Identity | undefined;
  /** Every identity currently known (reserved included), sorted by id. */
  list(): Identity[];
  /** Frees identities without references; returns how many were freed. */
  gc(): Promise<number>;
  /** Emits every add and delete. */
  readonly changes$: Observable<IdentityChange>;
  readonly range: IdentityRange;
}

/** Token for the IdentityAllocator. */
export const IdentityAllocatorToken = token<IdentityAllocator>('IdentityAllocator');
