/** The api-server cell's wiring: its module, providers and what they are built from (index.ts is its public face). */
import type { Router } from 'express';
import { config, invoke, module, provide, type DepsValues } from '../../hive/cell.js';
import { LifecycleToken } from '../../hive/lifecycle.js';
import { LoggerToken } from '../../hive/logger.js';
import type { Token } from '../../hive/token.js';
import { ApiRouterConfigToken, apiRouterConfigSchema, ApiServerConfigToken, apiServerConfigSchema, type ApiRouterConfig } from './config.js';
import { sharedSpecValidator, SpecOperations } from './operations.js';
import { ApiLimiters, ApiLimiterSetToken } from './ratelimit/set.js';
import { resolveLimits } from './ratelimit/params.js';
import { createApiRouter } from './router.js';
import { ApiServerImpl } from './server.js';
import { ApiOperationsToken, ApiRouterToken, ApiRoutersToken, ApiServerToken, type ApiOperations, type ApiServer } from './types.js';

/** The rate limiter cell: provides ApiLimiterSetToken from --api-rate-limit and --enable-api-rate-limit. */
export const apiRateLimiterCell = module(
  'api-rate-limiter',
  'Rate limiting of API requests',
  provide(ApiLimiterSetToken, (cfg: ApiRouterConfig) => new ApiLimiters(resolveLimits(cfg.apiRateLimit), cfg.enableApiRateLimit), ApiRouterConfigToken),
);

/** What the spec operations work with. */
const operationsDeps = { cfg: ApiRouterConfigToken, limiters: ApiLimiterSetToken } as const;

/** Builds the spec operations: validation against the shared spec, rate limits, the body size limit. */
function newOperations(d: DepsValues<typeof operationsDeps>): ApiOperations {
  return new SpecOperations({ validator: sharedSpecValidator(), limiters: d.limiters, maxBodyBytes: d.cfg.apiMaxBodyBytes });
}

/** What the API router is made of: the operations and every handler cell's router. */
const routerDeps = { ops: ApiOperationsToken, groups: ApiRoutersToken, log: LoggerToken } as const;

/** What the API server works with. */
const serverDeps = { cfg: ApiServerConfigToken, api: ApiRouterToken, log: LoggerToken, lc: LifecycleToken } as const;

/** Builds the API server (it appends its own start and stop hook). */
function newApiServer(d: DepsValues<typeof serverDeps>): ApiServer {
  return new ApiServerImpl(d.cfg, d.api, d.log, d.lc);
}

/** The API router cell (includes the rate limiter): the API as one express Router, listening nowhere. */
export const apiRouterCell = module(
  'api-router',
  'Agent API router (express: spec validation, rate limits, one error handler)',
  config(ApiRouterConfigToken, apiRouterConfigSchema),
  apiRateLimiterCell,
  provide(ApiOperationsToken, newOperations, operationsDeps),
  provide(ApiRouterToken, createApiRouter, routerDeps),
);

/** The API server cell (includes the router): serves the API on the socket. */
export const apiServerCell = module(
  'api-server',
  'Agent API server (express on the unix socket, optional TCP)',
  config(ApiServerConfigToken, apiServerConfigSchema),
  apiRouterCell,
  provide(ApiServerToken, newApiServer, serverDeps),
  invoke('serve-api', (_s: ApiServer) => undefined, ApiServerToken),
);

/**
 * The API of a hive that includes `apiRouterCell` (or `apiServerCell`) and handler cells, as an
 * express Router to mount in your own express app: `app.use('/cellium', apiRouter(hive))` serves
 * `/cellium/v1/healthz`. Mount it before any body parser of yours (it reads the bodies it needs).
 */
export function apiRouter(hive: { get<T>(token: Token<T>): T }): Router {
  return hive.get(ApiRouterToken).router;
}
