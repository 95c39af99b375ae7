/**
 * BPF map API handlers (module `api-map`): GET /map and GET /map/{name}, from the datapath's
 * maps (the in-memory tables or the kernel's maps), in Cilium's BPFMap shape.
 */
import type { Router } from 'express';
import { module, provideInto, type DepsValues } from '../../hive/cell.js';
import { ApiOperationsToken, ApiRoutersToken, type ApiOperations, type ApiRouterGroup } from '../api-server/types.js';
import { DatapathToken, type Datapath, type MapDump } from '../../datapath/types.js';
import { notFound } from '../api-server/index.js';
import { domainErrors } from './errors.js';

/** Cilium's BPFMap model of a map dump: entries with their desired action and last error. */
export function mapModel(m: MapDump): { path: string; cache: Record<string, string>[] } {
  const action = m.status.state === 'done' ? 'ok' : 'insert';
  return {
    path: m.path ?? m.name,
    cache: m.entries.map((e) => ({
      key: e.key,
      value: e.value,
      'desired-action': action,
      ...(m.status.state === 'error' && m.status.message ? { 'last-error': m.status.message } : {}),
    })),
  };
}

/** The map router. */
export function mapRouter(ops: ApiOperations, dp: Datapath): Router {
  const r = ops.router();
  ops.serve(r, 'GetMap', async (_req, res) => {
    res.json({ maps: (await dp.maps.list()).map(mapModel) });
  });
  ops.serve(r, 'GetMapName', async (_req, res) => {
    const name = String(res.locals.api.path.name);
    const m = await dp.maps.get(name);
    if (!m) throw notFound(`no BPF map named ${name}: GET /v1/map lists them`);
    res.json(mapModel(m));
  });
  r.use(domainErrors);
  return r;
}

/** What the map router works with. */
const mapRouterDeps = { ops: ApiOperationsToken, dp: DatapathToken } as const;

/** The map router, contributed to the API. */
function newMapRouter(d: DepsValues<typeof mapRouterDeps>): ApiRouterGroup {
  return { name: 'map', router: mapRouter(d.ops, d.dp) };
}

/** The map API handler cell. */
export const mapHandlersCell = module(
  'api-map',
  'BPF map API handlers',
  provideInto(ApiRoutersToken, newMapRouter, mapRouterDeps),
);
