/**
 * One address pool (a CIDR): the network address and the gateway (first usable address) are never
 * handed out, nor the IPv4 broadcast address. Allocation is round-robin from the last allocated
 * address, like Cilium's cluster-pool allocator, so a released address is not reused at once.
 */
import { cidrContainsAddr, cidrSize, formatAddr, formatCidr, type Addr, type Cidr } from '../../lib/addr.js';
import { exhausted, inUse, outsidePool, reservedAddr } from './errors.js';
import type { Family } from './types.js';

/** An endpoint's use of an address; `adopted` when the allocation existed before (with its expiration then). */
export interface EndpointUse {
  readonly id: number;
  readonly adopted: boolean;
  readonly expiresAt?: number;
  readonly expirationUUID?: string;
}

/** What the pool records per allocated address. */
export interface PoolEntry {
  readonly ip: string;
  readonly owner: string;
  /** Epoch ms after which an unconfirmed allocation is released. */
  expiresAt?: number;
  expirationUUID?: string;
  /** The endpoint using the address, if one does. */
  endpoint?: EndpointUse;
}

/** An address pool of one family. */
export class Pool {
  readonly family: Family;
  readonly cidrText: string;
  readonly gatewayText: string;
  private readonly first: bigint;
  private readonly last: bigint;
  private readonly entries = new Map<bigint, PoolEntry>();
  private cursor: bigint;

  constructor(readonly cidr: Cidr) {
    this.family = cidr.family;
    this.cidrText = formatCidr(cidr);
    const gateway = cidr.network + 1n;
    this.gatewayText = formatAddr(this.family, gateway);
    const top = cidr.network + cidrSize(cidr) - 1n;
    this.first = gateway + 1n;
    this.last = this.family === 'ipv4' ? top - 1n : top;
    this.cursor = this.last;
  }

  /** How many addresses can be allocated (network, gateway and IPv4 broadcast excluded). */
  get usable(): bigint {
    return this.last - this.first + 1n;
  }

  /** How many addresses are allocated. */
  get allocatedCount(): number {
    return this.entries.size;
  }

  /** The entry of an allocated address. */
  get(addr: Addr): PoolEntry | undefined {
    return this.entries.get(addr.value);
  }

  /** Every entry. */
  list(): IterableIterator<PoolEntry> {
    return this.entries.values();
  }

  /** The next free address after the last allocation (wrapping); throws when the pool is exhausted. */
  next(owner: string): PoolEntry {
    if (BigInt(this.entries.size) >= this.usable) throw exhausted(this.family, this.cidrText, this.usable);
    let v = this.cursor;
    for (;;) {
      v = v >= this.last ? this.first : v + 1n;
      if (!this.entries.has(v)) {
        this.cursor = v;
        return this.take(v, owner);
      }
    }
  }

  /** Whether the address lies inside the pool's CIDR. */
  contains(addr: Addr): boolean {
    return cidrContainsAddr(this.cidr, addr);
  }

  /** Allocates a given address; throws when outside the pool, reserved or taken. */
  claim(addr: Addr, owner: string): PoolEntry {
    const ip = formatAddr(addr.family, addr.value);
    if (!this.contains(addr)) throw outsidePool(ip, this.cidrText, this.family);
    if (addr.value === this.cidr.network) throw reservedAddr(ip, 'network', this.cidrText);
    if (addr.value === this.first - 1n) throw reservedAddr(ip, 'gateway', this.cidrText);
    if (addr.value > this.last) throw reservedAddr(ip, 'broadcast', this.cidrText);
    const held = this.entries.get(addr.value);
    if (held) throw inUse(ip, held.owner, held.endpoint?.id);
    return this.take(addr.value, owner);
  }

  /** Frees an address; false when it was not allocated. */
  free(addr: Addr): boolean {
    return this.entries.delete(addr.value);
  }

  private take(v: bigint, owner: string): PoolEntry {
    const entry: PoolEntry = { ip: formatAddr(this.family, v), owner };
    this.entries.set(v, entry);
    return entry;
  }
}
