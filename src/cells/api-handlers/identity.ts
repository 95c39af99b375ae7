/**
 * Identity API handlers (module `api-identity`): GET /identity (label filter), /identity/{id},
 * /identity/endpoints. Reads the IdentityAllocator; the endpoint counts come from the EndpointManager.
 */
import { createHash } from 'node:crypto';
import type { Router } from 'express';
import { module, provideInto, type DepsValues } from '../../hive/cell.js';
import { ApiOperationsToken, ApiRoutersToken, type ApiOperations, type ApiRouterGroup } from '../api-server/types.js';
import { EndpointManagerToken, type EndpointManager } from '../endpoint/types.js';
import { IdentityAllocatorToken, type Identity, type IdentityAllocator } from '../identity/types.js';
import { notFound } from '../api-server/index.js';
import { domainErrors } from './errors.js';
import { matchesAll, parseFilter } from './labels.js';

/** Cilium's Identity model of an identity. */
export function identityModel(id: Identity): { id: number; labels: string[]; labelsSHA256: string } {
  const labels = [...id.labels];
  return { id: id.id, labels, labelsSHA256: createHash('sha256').update(labels.join(';')).digest('hex') };
}

/** The identity router. */
export function identityRouter(ops: ApiOperations, ids: IdentityAllocator, eps: EndpointManager): Router {
  const r = ops.router();
  ops.serve(r, 'GetIdentity', (_req, res) => {
    const want = parseFilter(res.locals.api.body);
    const list = ids.list().filter((i) => matchesAll(i.labels, want));
    if (want.length && list.length === 0) throw notFound(`no identity has the labels ${(res.locals.api.body as string[]).join(', ')}`);
    res.json(list.map(identityModel));
  });
  ops.serve(r, 'GetIdentityID', (_req, res) => {
    const id = Number(res.locals.api.path.id);
    const identity = ids.lookup(id);
    if (!identity) throw notFound(`identity ${id} not found`);
    res.json(identityModel(identity));
  });
  ops.serve(r, 'GetIdentityEndpoints', (_req, res) => {
    const counts = new Map<number, number>();
    for (const ep of eps.getEndpoints()) if (ep.identity !== undefined) counts.set(ep.identity, (counts.get(ep.identity) ?? 0) + 1);
    const out = [...counts].sort((a, b) => a[0] - b[0]).flatMap(([id, refCount]) => {
      const identity = ids.lookup(id);
      return identity ? [{ identity: identityModel(identity), refCount }] : [];
    });
    res.json(out);
  });
  r.use(domainErrors);
  return r;
}

/** What the identity router works with. */
const identityRouterDeps = { ops: ApiOperationsToken, ids: IdentityAllocatorToken, eps: EndpointManagerToken } as const;

/** The identity router, contributed to the API. */
function newIdentityRouter(d: DepsValues<typeof identityRouterDeps>): ApiRouterGroup {
  return { name: 'identity', router: identityRouter(d.ops, d.ids, d.eps) };
}

/** The identity API handler cell. */
export const identityHandlersCell = module(
  'api-identity',
  'Identity API handlers',
  provideInto(ApiRoutersToken, newIdentityRouter, identityRouterDeps),
);
