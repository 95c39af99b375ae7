/**
 * The API cells: `api-router` (the whole API as one express Router: every handler cell's router
 * under `/v1`, request validation from api/openapi.yaml, Cilium's API rate limiters as middleware,
 * one error handler; mountable in any express app with `apiRouter(hive)`) and `api-server` (the
 * agent's express application serving it on the unix socket, optionally TCP). Handler cells
 * contribute routers with `provideInto(ApiRoutersToken, ...)`, serving operations through
 * `ApiOperationsToken`.
 */
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

export * from './types.js';
export * from './errors.js';
export {
  ApiServerConfigToken, apiServerConfigSchema, ApiRouterConfigToken, apiRouterConfigSchema, parseListenAddress,
  type ApiServerConfig, type ApiRouterConfig, type ListenAddress,
} from './config.js';
export { ApiLimiterSetToken, ApiLimiters, type ApiLimiterSet } from './ratelimit/set.js';
export { ApiLimiter, type LimiterReport, type LimitedRequest } from './ratelimit/limiter.js';
export { ApiLimiterName, DEFAULT_LIMITS, parseApiRateLimit, resolveLimits, parseRate, mergeLimiterConfig, type LimiterParams } from './ratelimit/params.js';
export { SpecOperations, sharedSpecValidator, expressPath } from './operations.js';
export { createApiRouter } from './router.js';
export { createApiApp, createApiHttpServer } from './app.js';
export { errorAnswer } from './error-handler.js';
export { sendJsonText } from './reply.js';
export { ApiServerImpl, listen } from './server.js';

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
