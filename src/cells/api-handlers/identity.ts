/**
 * Identity API handlers (module `api-identity`): GET /identity (label filter), /identity/{id},
 * /identity/endpoints. Reads the IdentityAllocator; the endpoint counts come from the EndpointManager.
 */
import { createHash } from 'node:crypto';
import { module, provideInto } from '../../hive/cell.js';
import { ApiRoutesToken, ok, type ApiRouteGroup } from '../api-server/types.js';
import { EndpointManagerToken, type EndpointManager } from '../endpoint/types.js';
import { IdentityAllocatorToken, type Identity, type IdentityAllocator } from '../identity/types.js';
import { mapped, notFound } from './errors.js';
import { matchesAll, parseFilter } from './labels.js';

/** Cilium's Identity model of an identity. */
export function identityModel(id: Identity): { id: number; labels: string[]; labelsSHA256: string } {
  const labels = [...id.labels];
  return { id: id.id, labels, labelsSHA256: createHash('sha256').update(labels.join(';')).digest('hex') };
}

/** The identity route group. */
export function identityRoutes(ids: IdentityAllocator, eps: EndpointManager): ApiRouteGroup {
  return {
    name: 'identity',
    routes: [
      {
        operationId: 'GetIdentity',
        handle: (req) =>
          mapped([400, 404], () => {
            const want = parseFilter(req.body);
            const list = ids.list().filter((i) => matchesAll(i.labels, want));
            if (want.length && list.length === 0) throw notFound(`no identity has the labels ${(req.body as string[]).join(', ')}`);
            return ok(list.map(identityModel));
          }),
      },
      {
        operationId: 'GetIdentityID',
        handle: (req) =>
          mapped([400, 404], () => {
            const id = Number(req.path.id);
            const identity = ids.lookup(id);
            if (!identity) throw notFound(`identity ${id} not found`);
            return ok(identityModel(identity));
          }),
      },
      {
        operationId: 'GetIdentityEndpoints',
        handle: () =>
          mapped([404], () => {
            const counts = new Map<number, number>();
            for (const ep of eps.getEndpoints()) if (ep.identity !== undefined) counts.set(ep.identity, (counts.get(ep.identity) ?? 0) + 1);
            const out = [...counts].sort((a, b) => a[0] - b[0]).flatMap(([id, refCount]) => {
              const identity = ids.lookup(id);
              return identity ? [{ identity: identityModel(identity), refCount }] : [];
            });
            return ok(out);
          }),
      },
    ],
  };
}

/** The identity API handler cell. */
export const identityHandlersCell = module(
  'api-identity',
  'Identity API handlers',
  provideInto(ApiRoutesToken, identityRoutes, IdentityAllocatorToken, EndpointManagerToken),
);
