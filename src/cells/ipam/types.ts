/**
 * IPAM: per-node pools from --ipv4-range / --ipv6-range; allocate next or a given IP with an owner
 * and an optional expiration (IPs a CNI ADD never confirmed), release, restore.
 */
import { token } from '../../hive/token.js';

/** Address family. */
export type Family = 'ipv4' | 'ipv6';

/** One allocation. */
export interface IPAllocation {
  readonly ip: string;
  readonly family: Family;
  readonly owner: string;
  /** The pool CIDR (e.g. 10.200.0.0/16). */
  readonly cidr: string;
  /** The gateway (router) address of the pool, e.g. 10.200.0.1. */
  readonly gateway: string;
  /** Set when the allocation expires unless confirmed. */
  readonly expirationUUID?: string;
}

/** A pool as shown by the status API. */
export interface PoolStatus {
  readonly family: Family;
  readonly cidr: string;
  readonly gateway: string;
  readonly size: number;
  readonly allocated: Readonly<Record<string, string>>;
}

/** Options of an allocation. */
export interface AllocateOptions {
  /** Release automatically after this many ms unless confirmed. */
  readonly expirationMs?: number;
}

/** The node's IP pools. */
export interface IPAM {
  /** Allocates the next free IP of a family. Throws IPAMError (exhausted, no pool). */
  allocateNext(family: Family, owner: string, opts?: AllocateOptions): IPAllocation;
  /** Allocates a given IP. Throws IPAMError (outside the pool, already allocated). */
  allocateIP(ip: string, owner: string, opts?: AllocateOptions): IPAllocation;
  /** Confirms an expiring allocation. */
  confirm(ip: string): void;
  /** Releases an IP; returns false when it was not allocated. */
  release(ip: string): boolean;
  /** Releases every IP of an owner; returns the released IPs. */
  releaseOwner(owner: string): string[];
  /** Re-claims an IP at restore (allowed even when already held by the same owner). */
  restore(ip: string, owner: string): IPAllocation;
  /** The owner of an IP, if allocated. */
  ownerOf(ip: string): string | undefined;
  /** The pools. */
  status(): PoolStatus[];
}

/** Token for IPAM. */
export const IPAMToken = token<IPAM>('IPAM');
