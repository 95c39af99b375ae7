/**
 * IPAM: per-node pools from --ipv4-range / --ipv6-range; allocate next or a given IP with an owner
 * and an optional expiration (IPs a CNI ADD never confirmed), release, restore.
 */
import { token } from '../../hive/token.js';
import type { Family } from '../../lib/addr.js';

/** Address family (see src/lib/addr.ts). */
export type { Family } from '../../lib/addr.js';

/** The IPAM modes of `--ipam` (Cilium's names): the node's own pools, or the netconf's IPAM plugin. */
export const IPAM_MODES = ['cluster-pool', 'delegated-plugin'] as const;
/** One of {@link IPAM_MODES}. */
export type IPAMMode = (typeof IPAM_MODES)[number];

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
  /** Allocatable addresses (network, gateway and IPv4 broadcast excluded). */
  readonly size: number;
  /** Allocated addresses. */
  readonly used: number;
  /** size - used. */
  readonly free: number;
  readonly allocated: Readonly<Record<string, string>>;
}

/** One address IPAM knows to be in use, in a pool or outside every pool. */
export interface AllocationStatus {
  readonly ip: string;
  readonly family: Family;
  readonly owner: string;
  /** The pool's CIDR; undefined for an out-of-pool address (an endpoint's, never handed out). */
  readonly pool?: string;
  /** Expiring unless an endpoint confirms it (a CNI ADD or `POST /ipam` with `expiration`). */
  readonly expiring: boolean;
  readonly expirationUUID?: string;
  /** Epoch ms at which an expiring allocation is released. */
  readonly expiresAt?: number;
  /** The endpoint using the address, when one does. */
  readonly endpointId?: number;
}

/** What {@link IPAM.useForEndpoint} did. */
export interface EndpointAddress {
  readonly ip: string;
  readonly family: Family;
  /** The allocation's owner (the endpoint's for a reservation it made; else whoever allocated it). */
  readonly owner: string;
  /** True when the endpoint's request created the allocation; false when it took over an existing one. */
  readonly reserved: boolean;
  /** True when the address lies outside the family's pool (or the family has no pool). */
  readonly outOfPool: boolean;
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
  /** Releases an IP; returns false when it was not allocated; throws IPAMError `in-use` while an endpoint uses it. */
  release(ip: string): boolean;
  /** Releases every IP of an owner that no endpoint uses; returns the released IPs. */
  releaseOwner(owner: string): string[];
  /**
   * Records that endpoint `endpointId` uses `ip` (creation and restore), so IPAM never hands it
   * out: a free address of the pool is reserved for the endpoint under `owner`; an address
   * allocated beforehand for it (CNI ADD, `POST /ipam`) is taken over as it is, its expiration
   * cleared (an expiring one only with its `expirationUUID`: it is in flight for one endpoint);
   * an address outside the pool
   * is recorded as out-of-pool and logged. Throws IPAMError: `in-use` (another endpoint uses it),
   * `reserved` (network, gateway, broadcast), `invalid`. Idempotent for the same endpoint.
   */
  useForEndpoint(ip: string, endpointId: number, owner: string, opts?: { readonly expirationUUID?: string }): EndpointAddress;
  /**
   * The endpoint stops using `ip`: an address it reserved is released; one it took over is
   * released too unless `keepAdopted` (Cilium's NoIPRelease: the CNI plugin releases it), in which
   * case it goes back to its owner as it was (expiration included). Returns whether it was released.
   */
  releaseForEndpoint(ip: string, endpointId: number, opts?: { readonly keepAdopted?: boolean }): boolean;
  /** The owner of an IP, if allocated (in a pool or out-of-pool). */
  ownerOf(ip: string): string | undefined;
  /** The pools. */
  status(): PoolStatus[];
  /** Every address in use, the pools' and the out-of-pool ones, IPv4 first, in address order. */
  allocations(): AllocationStatus[];
  /**
   * Replaces a family's pool before anything is allocated from it (a pod CIDR the node claimed in
   * the cluster pool at start). Throws IPAMError('in-use') once the pool has allocations.
   */
  setPool?(family: Family, cidr: string): void;
}

/** Token for IPAM. */
export const IPAMToken = token<IPAM>('IPAM');

// Re-exported for other cells (import a cell through its index.ts or types.ts only).
export { IPAMError } from './errors.js';
export type { IPAMErrorCode } from './errors.js';
