/** The health API handler (module `api-healthz`): GET /healthz from the agent status collector. */
import type { Router } from 'express';
import { module, provideInto, type DepsValues } from '../../hive/cell.js';
import { sendJsonText } from '../api-server/index.js';
import { ApiOperationsToken, ApiRoutersToken, type ApiOperations, type ApiRouterGroup } from '../api-server/types.js';
import { AgentStatusToken, type AgentStatus } from '../agent-status/index.js';

/** The healthz router: the collector's answer is JSON text already, sent as it is. */
export function healthzRouter(ops: ApiOperations, status: AgentStatus): Router {
  const r = ops.router();
  ops.serve(r, 'GetHealthz', async (_req, res) => sendJsonText(res, 200, await status.statusJson(res.locals.api.headers.brief === true)));
  return r;
}

/** What the healthz router works with. */
const healthzRouterDeps = { ops: ApiOperationsToken, status: AgentStatusToken } as const;

/** The healthz router, contributed to the API. */
function newHealthzRouter(d: DepsValues<typeof healthzRouterDeps>): ApiRouterGroup {
  return { name: 'healthz', router: healthzRouter(d.ops, d.status) };
}

/** The healthz API handler cell. */
export const healthzHandlersCell = module(
  'api-healthz',
  'Health API handler',
  provideInto(ApiRoutersToken, newHealthzRouter, healthzRouterDeps),
);
