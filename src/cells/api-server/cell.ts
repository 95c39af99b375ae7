/** The api-server cell's wiring: its module, providers and what they are built from (index.ts is its public face). */
import type { Router } from 'express';
import { config, invoke, module, provide } from '../../hive/cell.js';
import { LifecycleToken } from '../../hive/lifecycle.js';
import { LoggerToken, type Logger } from '../../hive/logger.js';
import type { Token } from '../../hive/token.js';
import { ApiRouterConfigToken, apiRouterConfigSchema, ApiServerConfigToken, apiServerConfigSchema, type ApiRouterConfig } from './config.js';
import { sharedSpecValidator, SpecOperations } from './operations.js';
import { ApiLimiters, ApiLimiterSetToken, type ApiLimiterSet } from './ratelimit/set.js';
import { resolveLimits } from './ratelimit/params.js';
import { createApiRouter } from './router.js';
import { ApiServerImpl } from './server.js';
import { ApiOperationsToken, ApiRouterToken, ApiRoutersToken, ApiServerToken, type ApiOperations, type ApiRouterGroup, type ApiServer } from './types.js';

/** The rate limiter cell: provides ApiLimiterSetToken from --api-rate-limit and --enable-api-rate-limit. */
export const apiRateLimiterCell = module(
  'api-rate-limiter',
  'Rate limiting of API requests',
  provide(ApiLimiterSetToken, (cfg: ApiRouterConfig) => new ApiLimiters(resolveLimits(cfg.apiRateLimit), cfg.enableApiRateLimit), ApiRouterConfigToken),
);

/** The API router cell (includes the rate limiter): the API as one express Router, listening nowhere. */
export const apiRouterCell = module(
  'api-router',
  'Agent API router (express: spec validation, rate limits, one error handler)',
  config(ApiRouterConfigToken, apiRouterConfigSchema),
  apiRateLimiterCell,
  provide(
    ApiOperationsToken,
    (cfg: ApiRouterConfig, limiters: ApiLimiterSet) => new SpecOperations({ validator: sharedSpecValidator(), limiters, maxBodyBytes: cfg.apiMaxBodyBytes }),
    ApiRouterConfigToken, ApiLimiterSetToken,
  ),
  provide(
    ApiRouterToken,
    (ops: ApiOperations, groups: readonly ApiRouterGroup[], log: Logger) => createApiRouter({ ops, groups, log }),
    ApiOperationsToken, ApiRoutersToken, LoggerToken,
  ),
);

/** The API server cell (includes the router): serves the API on the socket. */
export const apiServerCell = module(
  'api-server',
  'Agent API server (express on the unix socket, optional TCP)',
  config(ApiServerConfigToken, apiServerConfigSchema),
  apiRouterCell,
  provide(ApiServerToken, ApiServerImpl, ApiServerConfigToken, ApiRouterToken, LoggerToken, LifecycleToken),
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
