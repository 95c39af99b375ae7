/**
 * IPAM API handlers (module `api-ipam`): GET /ipam (the pools and every address in use; ours),
 * POST /ipam (next free address of one or every enabled family, optionally expiring), POST
 * /ipam/{ip}, DELETE /ipam/{ip}. Thin calls into IPAM with IPAMError codes mapped to statuses (in
 * use 409, no pool 501, exhausted 502).
 */
import { isIP } from 'node:net';
import type { Router } from 'express';
import { module, provideInto, type DepsValues } from '../../hive/cell.js';
import { HttpError } from '../api-server/types.js';
import { ApiOperationsToken, ApiRoutersToken, type ApiOperations, type ApiRouterGroup } from '../api-server/types.js';
import type { CelliumIPAM } from '../../api/models.js';
import { ipamSummary, IPAMToken, type Family, type IPAllocation, type IPAM, type PoolStatus } from '../ipam/index.js';
import { badField, notFound } from '../api-server/index.js';
import { domainErrors } from './errors.js';

/** How long an expiring allocation (header `expiration: true`) waits for an endpoint to confirm it. */
export const IPAM_EXPIRATION_MS = 10 * 60_000;

/** The owner of addresses allocated through the API without an `owner` (Cilium allows none). */
export const DEFAULT_OWNER = 'api';

/** The only pool name (one pool per family). */
export const DEFAULT_POOL = 'default';

/** Cilium's NodeAddressing from the pools. */
export function hostAddressing(pools: readonly PoolStatus[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const family of ['ipv4', 'ipv6'] as const) {
    const p = pools.find((x) => x.family === family);
    out[family] = p ? { enabled: true, ip: p.gateway, 'alloc-range': p.cidr, 'address-type': 'pool' } : { enabled: false };
  }
  return out;
}

function checkPool(query: Readonly<Record<string, unknown>>): void {
  const pool = query.pool;
  if (pool !== undefined && pool !== '' && pool !== DEFAULT_POOL) throw badField('/query/pool', `unknown IPAM pool "${String(pool)}"`, DEFAULT_POOL);
}

function addressResponse(a: IPAllocation): Record<string, unknown> {
  return { ip: a.ip, gateway: a.gateway, cidrs: [a.cidr], ...(a.expirationUUID ? { 'expiration-uuid': a.expirationUUID } : {}) };
}

/** GET /ipam's model: the pools and every address in use (of one family when given). */
export function ipamView(ipam: IPAM, family?: Family): CelliumIPAM {
  const pools = ipam.status().filter((p) => !family || p.family === family);
  const addrs = ipam.allocations().filter((a) => !family || a.family === family);
  return {
    ...ipamSummary(pools, addrs),
    pools: pools.map((p) => ({ name: DEFAULT_POOL, family: p.family, cidr: p.cidr, gateway: p.gateway, size: p.size, used: p.used, free: p.free })),
    addresses: addrs.map((a) => ({
      ip: a.ip, family: a.family, owner: a.owner, ...(a.pool ? { pool: DEFAULT_POOL } : {}), 'out-of-pool': a.pool === undefined, expiring: a.expiring,
      ...(a.expirationUUID ? { 'expiration-uuid': a.expirationUUID } : {}),
      ...(a.expiresAt !== undefined ? { expires: new Date(a.expiresAt).toISOString() } : {}),
      ...(a.endpointId !== undefined ? { 'endpoint-id': a.endpointId } : {}),
    })),
  };
}

/** The IPAM router. */
export function ipamRouter(ops: ApiOperations, ipam: IPAM): Router {
  const r = ops.router();
  ops.serve(r, 'GetIpam', (_req, res) => {
    const { query } = res.locals.api;
    checkPool(query);
    res.json(ipamView(ipam, query.family as Family | undefined));
  });
  ops.serve(r, 'PostIpam', (_req, res) => {
    const { query, headers } = res.locals.api;
    checkPool(query);
    const pools = ipam.status();
    const family = query.family as Family | undefined;
    const families = family ? [family] : pools.map((p) => p.family);
    if (family && !pools.some((p) => p.family === family)) throw new HttpError(502, `no ${family} pool is configured: set --${family}-range`);
    const owner = String(query.owner || DEFAULT_OWNER);
    const opts = headers.expiration === true ? { expirationMs: IPAM_EXPIRATION_MS } : {};
    const got: IPAllocation[] = [];
    try {
      for (const f of families) got.push(ipam.allocateNext(f, owner, opts));
    } catch (err) {
      for (const a of got) ipam.release(a.ip);
      throw err;
    }
    const address: Record<string, string> = {};
    const body: Record<string, unknown> = { address, 'host-addressing': hostAddressing(pools) };
    for (const a of got) {
      address[a.family] = a.ip;
      address[`${a.family}-pool-name`] = DEFAULT_POOL;
      if (a.expirationUUID) address[`${a.family}-expiration-uuid`] = a.expirationUUID;
      body[a.family] = addressResponse(a);
    }
    res.status(201).json(body);
  });
  ops.serve(r, 'PostIpamIP', (_req, res) => {
    const { path, query } = res.locals.api;
    checkPool(query);
    ipam.allocateIP(String(path.ip), String(query.owner || DEFAULT_OWNER));
    res.end();
  });
  ops.serve(r, 'DeleteIpamIP', (_req, res) => {
    const { path, query } = res.locals.api;
    checkPool(query);
    const ip = String(path.ip);
    const family = isIP(ip) === 6 ? 'ipv6' : 'ipv4';
    if (!ipam.status().some((p) => p.family === family)) throw new HttpError(501, `no ${family} pool is configured: set --${family}-range`);
    if (!ipam.release(ip)) throw notFound(`${ip} is not allocated`);
    res.end();
  });
  r.use(domainErrors);
  return r;
}

/** What the ipam router works with. */
const ipamRouterDeps = { ops: ApiOperationsToken, ipam: IPAMToken } as const;

/** The ipam router, contributed to the API. */
function newIpamRouter(d: DepsValues<typeof ipamRouterDeps>): ApiRouterGroup {
  return { name: 'ipam', router: ipamRouter(d.ops, d.ipam) };
}

/** The IPAM API handler cell. */
export const ipamHandlersCell = module(
  'api-ipam',
  'IPAM API handlers',
  provideInto(ApiRoutersToken, newIpamRouter, ipamRouterDeps),
);
