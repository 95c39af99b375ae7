/**
 * BPF map API handlers (module `api-map`): GET /map and GET /map/{name}, from the datapath's
 * maps (the in-memory tables or the kernel's maps), in Cilium's BPFMap shape.
 */
import { module, provideInto } from '../../hive/cell.js';
import { ApiRoutesToken, ok, type ApiRouteGroup } from '../api-server/types.js';
import { DatapathToken, type Datapath, type MapDump } from '../datapath/types.js';
import { notFound } from './errors.js';

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

/** The map route group. */
export function mapRoutes(dp: Datapath): ApiRouteGroup {
  return {
    name: 'map',
    routes: [
      { operationId: 'GetMap', handle: async () => ok({ maps: (await dp.maps.list()).map(mapModel) }) },
      {
        operationId: 'GetMapName',
        handle: async (req) => {
          const m = await dp.maps.get(String(req.path.name));
          if (!m) throw notFound(`no BPF map named ${String(req.path.name)}: GET /v1/map lists them`);
          return ok(mapModel(m));
        },
      },
    ],
  };
}

/** The map API handler cell. */
export const mapHandlersCell = module('api-map', 'BPF map API handlers', provideInto(ApiRoutesToken, mapRoutes, DatapathToken));
