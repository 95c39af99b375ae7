/**
 * NodeIPAM: the node's pools (one per configured family) behind the IPAM interface. Allocations
 * carry an owner (`ns/pod` or a container id) and may expire unless an endpoint takes them over,
 * for addresses a CNI ADD never finished; a timer job of the cell calls `releaseExpired`. IPAM
 * knows every address in use: an endpoint's addresses are recorded with the endpoint
 * (`useForEndpoint`), including those outside every pool, which are never handed out either.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from '../../hive/logger.js';
import { formatAddr, formatCidr, parseAddr, parseCidr, type Addr } from '../../lib/addr.js';
import type { IPAMConfig } from './config.js';
import { IPAMError, badRange, inFlight, inUse, invalidIP, noPool, otherAllocation } from './errors.js';
import { Pool, type PoolEntry } from './pool.js';
import type { AllocateOptions, AllocationStatus, EndpointAddress, Family, IPAM, IPAllocation, PoolStatus } from './types.js';

/** An address an endpoint uses outside every pool. */
interface OutsideEntry extends PoolEntry {
  readonly family: Family;
}

/** IPAM over the configured pools. */
export class NodeIPAM implements IPAM {
  private readonly pools = new Map<Family, Pool>();
  /** Out-of-pool addresses of endpoints, by canonical address. */
  private readonly outside = new Map<string, OutsideEntry>();

  constructor(
    cfg: Pick<IPAMConfig, 'ipv4Range' | 'ipv6Range'>,
    private readonly log?: Logger,
    private readonly now: () => number = Date.now,
  ) {
    if (cfg.ipv4Range) this.pools.set('ipv4', new Pool(parseCidr(cfg.ipv4Range)));
    if (cfg.ipv6Range) this.pools.set('ipv6', new Pool(parseCidr(cfg.ipv6Range)));
  }

  /** See IPAM. */
  setPool(family: Family, cidr: string): void {
    const c = parseCidr(cidr);
    if (c.family !== family) throw badRange(family === 'ipv4' ? 'ipv4-range' : 'ipv6-range', cidr, `expected an ${family} CIDR`);
    const old = this.pools.get(family);
    if (old && !old.list().next().done) throw new IPAMError('in-use', `the ${family} pool ${old.cidrText} has allocations: its CIDR can only change before the first allocation`);
    const pool = new Pool(c);
    // endpoints restored before the pool was set (their addresses recorded out of pool) keep them:
    // those inside the new pool are taken in it, so it never hands them out again
    for (const [text, e] of this.outside) {
      const addr = parse(text);
      if (e.family !== family || !pool.contains(addr)) continue;
      try {
        const taken = pool.claim(addr, e.owner);
        if (e.endpoint) taken.endpoint = e.endpoint;
        this.outside.delete(text);
      } catch {
        // its network, gateway or broadcast address: stays out of pool (never handed out either)
      }
    }
    this.pools.set(family, pool);
    this.log?.info({ family, cidr: formatCidr(c) }, 'IPAM pool set');
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
  release(ip: string): boolean {
    const { pool, addr, entry } = this.find(ip);
    if (entry?.endpoint) throw inUse(entry.ip, entry.owner, entry.endpoint.id);
    const released = pool?.free(addr) ?? false;
    if (released) this.log?.debug({ ip }, 'released IP');
    return released;
  }

  /** See IPAM. */
  releaseOwner(owner: string): string[] {
    const released: string[] = [];
    for (const pool of this.pools.values()) {
      for (const e of [...pool.list()]) {
        if (e.owner === owner && !e.endpoint && this.release(e.ip)) released.push(e.ip);
      }
    }
    return released;
  }

  /** See IPAM. */
  useForEndpoint(ip: string, endpointId: number, owner: string, opts: { readonly expirationUUID?: string } = {}): EndpointAddress {
    const { pool, addr, entry } = this.find(ip);
    checkOwner(owner);
    if (entry) return this.adopt(entry, addr.family, endpointId, opts.expirationUUID);
    if (pool?.contains(addr)) {
      const taken = pool.claim(addr, owner);
      taken.endpoint = { id: endpointId, adopted: false };
      this.log?.debug({ ip: taken.ip, owner, endpointID: endpointId }, 'reserved IP for an endpoint');
      return { ip: taken.ip, family: addr.family, owner, reserved: true, outOfPool: false };
    }
    const text = formatAddr(addr.family, addr.value);
    this.outside.set(text, { ip: text, family: addr.family, owner, endpoint: { id: endpointId, adopted: false } });
    const where = pool ? `outside the ${addr.family} pool ${pool.cidrText}` : `with no ${addr.family} pool configured`;
    this.log?.warn({ ip: text, owner, endpointID: endpointId, pool: pool?.cidrText }, `endpoint ${endpointId} uses ${text}, ${where}: recorded as an out-of-pool address (never handed out)`);
    return { ip: text, family: addr.family, owner, reserved: true, outOfPool: true };
  }

  /** Takes an existing allocation over for an endpoint (or finds it already taken by that endpoint). */
  private adopt(entry: PoolEntry, family: Family, endpointId: number, expirationUUID: string | undefined): EndpointAddress {
    const result = { ip: entry.ip, family, owner: entry.owner, reserved: entry.endpoint?.adopted === false, outOfPool: this.outside.get(entry.ip) === entry };
    if (entry.endpoint?.id === endpointId) return result;
    if (entry.endpoint) throw inUse(entry.ip, entry.owner, entry.endpoint.id);
    // an expiring allocation is in flight for one endpoint: only its expiration UUID proves the caller is that endpoint
    if (entry.expirationUUID && expirationUUID !== entry.expirationUUID) throw expirationUUID ? otherAllocation(entry.ip, entry.owner) : inFlight(entry.ip, entry.owner);
    entry.endpoint = { id: endpointId, adopted: true, expiresAt: entry.expiresAt, expirationUUID: entry.expirationUUID };
    delete entry.expiresAt;
    delete entry.expirationUUID;
    this.log?.debug({ ip: entry.ip, owner: entry.owner, endpointID: endpointId }, 'endpoint took over its IP allocation');
    return { ...result, reserved: false };
  }

  /** See IPAM. */
  releaseForEndpoint(ip: string, endpointId: number, opts: { readonly keepAdopted?: boolean } = {}): boolean {
    const { pool, addr, entry } = this.find(ip);
    const use = entry?.endpoint;
    if (!entry || use?.id !== endpointId) return false;
    if (use.adopted && opts.keepAdopted) {
      delete entry.endpoint;
      if (use.expiresAt !== undefined) entry.expiresAt = use.expiresAt;
      if (use.expirationUUID !== undefined) entry.expirationUUID = use.expirationUUID;
      return false;
    }
    const released = this.outside.delete(entry.ip) || (pool?.free(addr) ?? false);
    if (released) this.log?.debug({ ip: entry.ip, endpointID: endpointId }, 'released the IP of an endpoint');
    return released;
  }

  /** See IPAM. */
  ownerOf(ip: string): string | undefined {
    const addr = parseAddr(ip);
    return addr && this.entryOf(addr)?.owner;
  }

  /** See IPAM. */
  status(): PoolStatus[] {
    return [...this.pools.values()].map((p) => ({
      family: p.family,
      cidr: p.cidrText,
      gateway: p.gatewayText,
      size: Number(p.usable),
      used: p.allocatedCount,
      free: Number(p.usable) - p.allocatedCount,
      allocated: Object.fromEntries([...p.list()].map((e) => [e.ip, e.owner])),
    }));
  }

  /** See IPAM. */
  allocations(): AllocationStatus[] {
    const view = (e: PoolEntry, family: Family, pool?: string): AllocationStatus => ({
      ip: e.ip, family, owner: e.owner, ...(pool ? { pool } : {}), expiring: e.expiresAt !== undefined,
      ...(e.expirationUUID ? { expirationUUID: e.expirationUUID } : {}),
      ...(e.expiresAt !== undefined ? { expiresAt: e.expiresAt } : {}),
      ...(e.endpoint ? { endpointId: e.endpoint.id } : {}),
    });
    const all = [
      ...[...this.pools.values()].flatMap((p) => [...p.list()].map((e) => view(e, p.family, p.cidrText))),
      ...[...this.outside.values()].map((e) => view(e, e.family)),
    ];
    const key = (a: AllocationStatus): [number, bigint] => [a.family === 'ipv4' ? 4 : 6, parseAddr(a.ip)!.value];
    return all.sort((a, b) => {
      const [fa, va] = key(a);
      const [fb, vb] = key(b);
      return fa - fb || (va < vb ? -1 : va > vb ? 1 : 0);
    });
  }

  /** Releases every allocation whose expiration passed without an endpoint taking it over; returns the IPs. */
  releaseExpired(now: number = this.now()): string[] {
    const expired: string[] = [];
    for (const pool of this.pools.values()) {
      for (const e of [...pool.list()]) {
        if (e.expiresAt !== undefined && e.expiresAt <= now && !e.endpoint && this.release(e.ip)) {
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
    return {
      ip: entry.ip, family: pool.family, owner: entry.owner, cidr: pool.cidrText, gateway: pool.gatewayText,
      ...(entry.expirationUUID ? { expirationUUID: entry.expirationUUID } : {}),
    };
  }

  private pool(family: Family): Pool {
    const p = this.pools.get(family);
    if (!p) throw noPool(family);
    return p;
  }

  /** The entry of an address: its pool's, else an out-of-pool one. */
  private entryOf(addr: Addr): PoolEntry | undefined {
    return this.pools.get(addr.family)?.get(addr) ?? this.outside.get(formatAddr(addr.family, addr.value));
  }

  private find(ip: string): { pool?: Pool; addr: Addr; entry?: PoolEntry } {
    const addr = parse(ip);
    return { pool: this.pools.get(addr.family), addr, entry: this.entryOf(addr) };
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
