/**
 * NodeIPAM: the node's pools (one per configured family) behind the IPAM interface. Allocations
 * carry an owner (`ns/pod` or a container id) and may expire unless confirmed, for addresses a
 * CNI ADD never confirmed; a timer job of the cell calls `releaseExpired`.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from '../../hive/logger.js';
import { parseAddr, parseCidr, type Addr } from './addr.js';
import type { IPAMConfig } from './config.js';
import { IPAMError, inUse, invalidIP, noPool, notAllocated } from './errors.js';
import { Pool, type PoolEntry } from './pool.js';
import type { AllocateOptions, Family, IPAM, IPAllocation, PoolStatus } from './types.js';

/** IPAM over the configured pools. */
export class NodeIPAM implements IPAM {
  private readonly pools = new Map<Family, Pool>();

  constructor(
    cfg: Pick<IPAMConfig, 'ipv4Range' | 'ipv6Range'>,
    private readonly log?: Logger,
    private readonly now: () => number = Date.now,
  ) {
    if (cfg.ipv4Range) this.pools.set('ipv4', new Pool(parseCidr(cfg.ipv4Range)));
    if (cfg.ipv6Range) this.pools.set('ipv6', new Pool(parseCidr(cfg.ipv6Range)));
  }

  /** See IPAM. */
  allocateNext(family: Family, owner: string, opts: AllocateOptions = {}): IPAllocation {
    const pool = this.pool(family);
    return this.finish(pool, pool.next(checkOwner(owner)), opts);
  }

  /** See IPAM. */
  allocateIP(ip: string, owner: string, opts: AllocateOptions = {}): IPAllocation {
    const addr = parse(ip);
    const pool = this.pool(addr.family);
    return this.finish(pool, pool.claim(addr, checkOwner(owner)), opts);
  }

  /** See IPAM. */
  confirm(ip: string): void {
    const { entry } = this.find(ip);
    if (!entry) throw notAllocated(ip);
    delete entry.expiresAt;
    delete entry.expirationUUID;
  }

  /** See IPAM. */
  release(ip: string): boolean {
    const { pool, addr } = this.find(ip);
    const released = pool?.free(addr) ?? false;
    if (released) this.log?.debug({ ip }, 'released IP');
    return released;
  }

  /** See IPAM. */
  releaseOwner(owner: string): string[] {
    const released: string[] = [];
    for (const pool of this.pools.values()) {
      for (const e of [...pool.list()]) {
        if (e.owner === owner && this.release(e.ip)) released.push(e.ip);
      }
    }
    return released;
  }

  /** See IPAM. */
  restore(ip: string, owner: string): IPAllocation {
    const { pool, entry } = this.find(ip);
    if (pool && entry) {
      if (entry.owner !== owner) throw inUse(entry.ip, entry.owner);
      delete entry.expiresAt;
      delete entry.expirationUUID;
      return this.allocation(pool, entry);
    }
    return this.allocateIP(ip, owner);
  }

  /** See IPAM. */
  ownerOf(ip: string): string | undefined {
    const addr = parseAddr(ip);
    return addr && this.pools.get(addr.family)?.get(addr)?.owner;
  }

  /** See IPAM. */
  status(): PoolStatus[] {
    return [...this.pools.values()].map((p) => ({
      family: p.family,
      cidr: p.cidrText,
      gateway: p.gatewayText,
      size: Number(p.usable),
      allocated: Object.fromEntries([...p.list()].map((e) => [e.ip, e.owner])),
    }));
  }

  /** Releases every allocation whose expiration passed without a confirm; returns the IPs. */
  releaseExpired(now: number = this.now()): string[] {
    const expired: string[] = [];
    for (const pool of this.pools.values()) {
      for (const e of [...pool.list()]) {
        if (e.expiresAt !== undefined && e.expiresAt <= now && this.release(e.ip)) {
          expired.push(e.ip);
          this.log?.info({ ip: e.ip, owner: e.owner }, 'released IP whose allocation was never confirmed');
        }
      }
    }
    return expired;
  }

  private finish(pool: Pool, entry: PoolEntry, opts: AllocateOptions): IPAllocation {
    if (opts.expirationMs !== undefined) {
      if (!(opts.expirationMs > 0)) {
        pool.free(parse(entry.ip));
        throw new IPAMError('invalid', `expirationMs must be a positive number of milliseconds, got ${opts.expirationMs}`, entry.ip);
      }
      entry.expiresAt = this.now() + opts.expirationMs;
      entry.expirationUUID = randomUUID();
    }
    this.log?.debug({ ip: entry.ip, owner: entry.owner }, 'allocated IP');
    return this.allocation(pool, entry);
  }

  private allocation(pool: Pool, e: PoolEntry): IPAllocation {
    return {
      ip: e.ip, family: pool.family, owner: e.owner, cidr: pool.cidrText, gateway: pool.gatewayText,
      ...(e.expirationUUID ? { expirationUUID: e.expirationUUID } : {}),
    };
  }

  private pool(family: Family): Pool {
    const p = this.pools.get(family);
    if (!p) throw noPool(family);
    return p;
  }

  private find(ip: string): { pool?: Pool; addr: Addr; entry?: PoolEntry } {
    const addr = parse(ip);
    const pool = this.pools.get(addr.family);
    return { pool, addr, entry: pool?.get(addr) };
  }
}

function parse(ip: string): Addr {
  const addr = parseAddr(typeof ip === 'string' ? ip.trim() : String(ip));
  if (!addr) throw invalidIP(ip);
  return addr;
}

function checkOwner(owner: string): string {
  if (typeof owner !== 'string' || owner.trim() === '') {
    throw new IPAMError('invalid', 'owner is required: give "namespace/pod" or the container id');
  }
  return owner;
}
