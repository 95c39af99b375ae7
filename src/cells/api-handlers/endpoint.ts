/**
 * Endpoint API handlers (module `api-endpoint`): /endpoint, /endpoint/{id} and its config, labels,
 * log and healthz. Thin: each calls EndpointAPIManager (changes) or EndpointManager (reads) and
 * maps EndpointError codes to statuses. Rate limited like Cilium (endpoint-create, -delete, -patch,
 * -get, -list).
 */
import type { Router } from 'express';
import { module, provideInto, type DepsValues } from '../../hive/cell.js';
import { ApiLimiterName } from '../api-server/types.js';
import { ApiOperationsToken, ApiRoutersToken, type ApiOperations, type ApiResponse, type ApiRouterGroup } from '../api-server/types.js';
import type { EndpointChangeRequest } from '../endpoint/types.js';
import { EndpointAPIManagerToken, EndpointManagerToken, type EndpointAPIManager, type EndpointManager, type EndpointView } from '../endpoint/types.js';
import { badField, notFound } from '../api-server/index.js';
import { domainErrors } from './errors.js';
import { matchesAll, parseFilter } from './labels.js';

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

/** The endpoint router. */
export function endpointRouter(ops: ApiOperations, api: EndpointAPIManager, eps: EndpointManager): Router {
  const ctx = (res: ApiResponse) => ({ signal: res.locals.api.signal });
  const id = (res: ApiResponse): string => String(res.locals.api.path.id);
  const find = (res: ApiResponse): EndpointView => {
    const ep = eps.lookup(id(res));
    if (!ep) throw notFound(`endpoint ${id(res)} not found`);
    return ep;
  };
  const { endpointCreate, endpointDelete, endpointGet, endpointList, endpointPatch } = ApiLimiterName;
  const r = ops.router();
  ops.serve(r, 'GetEndpoint', ops.limit(endpointList), (_req, res) => {
    const want = parseFilter(res.locals.api.body);
    const list = eps.getEndpoints().filter((ep) => matchesAll(ep.labels, want));
    if (want.length && list.length === 0) throw notFound(`no endpoint has the labels ${(res.locals.api.body as string[]).join(', ')}`);
    res.json(list.map((ep) => ep.toModel()));
  });
  ops.serve(r, 'DeleteEndpoint', ops.limit(endpointDelete), async (_req, res) => {
    const containerId = (res.locals.api.body as { 'container-id': string })['container-id'];
    const n = await api.deleteEndpointsByContainerID(ctx(res), containerId);
    if (n === 0) throw notFound(`no endpoint of container ${containerId}`);
    res.end();
  });
  ops.serve(r, 'GetEndpointID', ops.limit(endpointGet), (_req, res) => {
    res.json(find(res).toModel());
  });
  ops.serve(r, 'PutEndpointID', ops.limit(endpointCreate), async (_req, res) => {
    const body = res.locals.api.body as EndpointChangeRequest;
    const pathId = numericPathId(id(res));
    if (pathId && body.id && body.id !== pathId) {
      throw badField('/body/id', `the body's id ${body.id} differs from the path's ${pathId}`, `${pathId} or no id`);
    }
    const ep = await api.createEndpoint(ctx(res), pathId && !body.id ? { ...body, id: pathId } : body);
    res.status(201).json(ep.toModel());
  });
  ops.serve(r, 'PatchEndpointID', ops.limit(endpointPatch), async (_req, res) => {
    await api.patchEndpoint(ctx(res), id(res), res.locals.api.body as EndpointChangeRequest);
    res.end();
  });
  ops.serve(r, 'DeleteEndpointID', ops.limit(endpointDelete), async (_req, res) => {
    await api.deleteEndpoint(ctx(res), id(res));
    res.end();
  });
  ops.serve(r, 'GetEndpointIDConfig', ops.limit(endpointGet), (_req, res) => {
    const m = find(res).toModel();
    res.json({ realized: { options: { ...(m.spec.options ?? {}) } }, immutable: {} });
  });
  ops.serve(r, 'PatchEndpointIDConfig', ops.limit(endpointPatch), async (_req, res) => {
    const spec = res.locals.api.body as { options?: Record<string, string> };
    await api.patchConfig(ctx(res), id(res), spec.options ?? {});
    res.end();
  });
  ops.serve(r, 'GetEndpointIDLabels', ops.limit(endpointGet), (_req, res) => {
    const ep = find(res);
    const user = [...userLabels(ep)];
    const l = ep.toModel().status.labels;
    res.json({
      spec: { user },
      status: {
        realized: { user: [...(l.realized?.user ?? user)] },
        'security-relevant': [...(l['security-relevant'] ?? [])],
        derived: [...(l.derived ?? [])],
        disabled: [...(l.disabled ?? [])],
      },
    });
  });
  ops.serve(r, 'PatchEndpointIDLabels', ops.limit(endpointPatch), async (_req, res) => {
    const wanted = new Set((res.locals.api.body as { user?: string[] }).user ?? []);
    const current = new Set(userLabels(find(res)));
    const add = [...wanted].filter((l) => !current.has(l));
    const del = [...current].filter((l) => !wanted.has(l));
    if (add.length || del.length) await api.patchLabels(ctx(res), id(res), add, del);
    res.end();
  });
  ops.serve(r, 'GetEndpointIDLog', ops.limit(endpointGet), (_req, res) => {
    res.json(find(res).log().map((e) => ({ ...e })));
  });
  ops.serve(r, 'GetEndpointIDHealthz', ops.limit(endpointGet), (_req, res) => {
    res.json({ ...find(res).health() });
  });
  r.use(domainErrors);
  return r;
}

/** What the endpoint router works with. */
const endpointRouterDeps = { ops: ApiOperationsToken, api: EndpointAPIManagerToken, eps: EndpointManagerToken } as const;

/** The endpoint router, contributed to the API. */
function newEndpointRouter(d: DepsValues<typeof endpointRouterDeps>): ApiRouterGroup {
  return { name: 'endpoint', router: endpointRouter(d.ops, d.api, d.eps) };
}

/** The endpoint API handler cell. */
export const endpointHandlersCell = module(
  'api-endpoint',
  'Endpoint API handlers',
  provideInto(ApiRoutersToken, newEndpointRouter, endpointRouterDeps),
);
