/**
 * Endpoint API handlers (module `api-endpoint`): /endpoint, /endpoint/{id} and its config, labels,
 * log and healthz. Thin: each calls EndpointAPIManager (changes) or EndpointManager (reads) and
 * maps EndpointError codes to statuses. Rate limited like Cilium (endpoint-create, -delete, -patch,
 * -get, -list).
 */
import { module, provideInto } from '../../hive/cell.js';
import { ApiLimiterName } from '../api-server/ratelimit/params.js';
import { ApiRoutesToken, created, ok, type ApiRequest, type ApiRouteGroup } from '../api-server/types.js';
import type { EndpointChangeRequest } from '../endpoint/model.js';
import { EndpointAPIManagerToken, EndpointManagerToken, type EndpointAPIManager, type EndpointManager, type EndpointView } from '../endpoint/types.js';
import { badField, mapped, notFound } from './errors.js';
import { matchesAll, parseFilter } from './labels.js';

/** Statuses the endpoint operations declare. */
const GET = [400, 404, 429];
const CHANGE = [400, 404, 429, 500, 503];
const CREATE = [400, 409, 429, 500, 503];

/** The numeric endpoint id a path id names directly (`12`, `cilium-local:12`), if any. */
export function numericPathId(id: string): number | undefined {
  const m = /^(?:cilium-local:)?(\d+)$/.exec(id);
  return m ? Number(m[1]) : undefined;
}

/** The user labels of an endpoint as the model reports them. */
function userLabels(ep: EndpointView): readonly string[] {
  const m = ep.toModel();
  return m.spec['label-configuration']?.user ?? m.status.labels.realized?.user ?? [];
}

/** The endpoint route group. */
export function endpointRoutes(api: EndpointAPIManager, eps: EndpointManager): ApiRouteGroup {
  const ctx = (req: ApiRequest) => ({ signal: req.signal });
  const id = (req: ApiRequest): string => String(req.path.id);
  const find = (req: ApiRequest): EndpointView => {
    const ep = eps.lookup(id(req));
    if (!ep) throw notFound(`endpoint ${id(req)} not found`);
    return ep;
  };
  return {
    name: 'endpoint',
    routes: [
      {
        operationId: 'GetEndpoint',
        limiter: ApiLimiterName.endpointList,
        handle: (req) =>
          mapped(GET, () => {
            const want = parseFilter(req.body);
            const list = eps.getEndpoints().filter((ep) => matchesAll(ep.labels, want));
            if (want.length && list.length === 0) throw notFound(`no endpoint has the labels ${(req.body as string[]).join(', ')}`);
            return ok(list.map((ep) => ep.toModel()));
          }),
      },
      {
        operationId: 'DeleteEndpoint',
        limiter: ApiLimiterName.endpointDelete,
        handle: (req) =>
          mapped(CHANGE, async () => {
            const containerId = (req.body as { 'container-id': string })['container-id'];
            const n = await api.deleteEndpointsByContainerID(ctx(req), containerId);
            if (n === 0) throw notFound(`no endpoint of container ${containerId}`);
            return ok();
          }),
      },
      {
        operationId: 'GetEndpointID',
        limiter: ApiLimiterName.endpointGet,
        handle: (req) => mapped(GET, () => ok(find(req).toModel())),
      },
      {
        operationId: 'PutEndpointID',
        limiter: ApiLimiterName.endpointCreate,
        handle: (req) =>
          mapped(CREATE, async () => {
            const body = req.body as EndpointChangeRequest;
            const pathId = numericPathId(id(req));
            if (pathId && body.id && body.id !== pathId) {
              throw badField('/body/id', `the body's id ${body.id} differs from the path's ${pathId}`, `${pathId} or no id`);
            }
            const ep = await api.createEndpoint(ctx(req), pathId && !body.id ? { ...body, id: pathId } : body);
            return created(ep.toModel());
          }),
      },
      {
        operationId: 'PatchEndpointID',
        limiter: ApiLimiterName.endpointPatch,
        handle: (req) =>
          mapped(CHANGE, async () => {
            await api.patchEndpoint(ctx(req), id(req), req.body as EndpointChangeRequest);
            return ok();
          }),
      },
      {
        operationId: 'DeleteEndpointID',
        limiter: ApiLimiterName.endpointDelete,
        handle: (req) =>
          mapped(CHANGE, async () => {
            await api.deleteEndpoint(ctx(req), id(req));
            return ok();
          }),
      },
      {
        operationId: 'GetEndpointIDConfig',
        limiter: ApiLimiterName.endpointGet,
        handle: (req) =>
          mapped(GET, () => {
            const m = find(req).toModel();
            return ok({ realized: { options: { ...(m.spec.options ?? {}) } }, immutable: {} });
          }),
      },
      {
        operationId: 'PatchEndpointIDConfig',
        limiter: ApiLimiterName.endpointPatch,
        handle: (req) =>
          mapped(CHANGE, async () => {
            const spec = req.body as { options?: Record<string, string> };
            await api.patchConfig(ctx(req), id(req), spec.options ?? {});
            return ok();
          }),
      },
      {
        operationId: 'GetEndpointIDLabels',
        limiter: ApiLimiterName.endpointGet,
        handle: (req) =>
          mapped(GET, () => {
            const ep = find(req);
            const m = ep.toModel();
            const user = [...userLabels(ep)];
            const l = m.status.labels;
            return ok({
              spec: { user },
              status: {
                realized: { user: [...(l.realized?.user ?? user)] },
                'security-relevant': [...(l['security-relevant'] ?? [])],
                derived: [...(l.derived ?? [])],
                disabled: [...(l.disabled ?? [])],
              },
            });
          }),
      },
      {
        operationId: 'PatchEndpointIDLabels',
        limiter: ApiLimiterName.endpointPatch,
        handle: (req) =>
          mapped(CHANGE, async () => {
            const wanted = new Set((req.body as { user?: string[] }).user ?? []);
            const current = new Set(userLabels(find(req)));
            const add = [...wanted].filter((l) => !current.has(l));
            const del = [...current].filter((l) => !wanted.has(l));
            if (add.length || del.length) await api.patchLabels(ctx(req), id(req), add, del);
            return ok();
          }),
      },
      {
        operationId: 'GetEndpointIDLog',
        limiter: ApiLimiterName.endpointGet,
        handle: (req) => mapped(GET, () => ok(find(req).log().map((e) => ({ ...e })))),
      },
      {
        operationId: 'GetEndpointIDHealthz',
        limiter: ApiLimiterName.endpointGet,
        handle: (req) => mapped(GET, () => ok({ ...find(req).health() })),
      },
    ],
  };
}

/** The endpoint API handler cell. */
export const endpointHandlersCell = module(
  'api-endpoint',
  'Endpoint API handlers',
  provideInto(ApiRoutesToken, endpointRoutes, EndpointAPIManagerToken, EndpointManagerToken),
);

