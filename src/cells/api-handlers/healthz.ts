/** The health API handler (module `api-healthz`): GET /healthz from the agent status collector. */
import { module, provideInto } from '../../hive/cell.js';
import { ApiRoutesToken, type ApiRouteGroup } from '../api-server/types.js';
import { AgentStatusToken, type AgentStatus } from '../agent-status/index.js';

/** The healthz route group. */
export function healthzRoutes(status: AgentStatus): ApiRouteGroup {
  return {
    name: 'healthz',
    routes: [{ operationId: 'GetHealthz', handle: async (req) => ({ status: 200, json: await status.statusJson(req.headers.brief === true) }) }],
  };
}

/** The healthz API handler cell. */
export const healthzHandlersCell = module('api-healthz', 'Health API handler', provideInto(ApiRoutesToken, healthzRoutes, AgentStatusToken));
