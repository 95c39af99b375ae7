/**
 * The API server cells: `api-rate-limiter` (Cilium's APILimiterSet for the endpoint APIs, from
 * --api-rate-limit) and `api-server` (node:http on the unix socket, optionally TCP; every request
 * validated against api/openapi.yaml). Handler cells contribute routes with
 * `provideInto(ApiRoutesToken, ...)`.
 */
import { config, invoke, module, provide } from '../../hive/cell.js';
import { LifecycleToken } from '../../hive/lifecycle.js';
import { LoggerToken } from '../../hive/logger.js';
import { ApiServerConfigToken, apiServerConfigSchema, type ApiServerConfig } from './config.js';
import { ApiLimiters, ApiLimiterSetToken } from './ratelimit/set.js';
import { resolveLimits } from './ratelimit/params.js';
import { ApiServerImpl } from './server.js';
import { ApiRoutesToken, ApiServerToken, type ApiServer } from './types.js';

export * from './types.js';
export * from './errors.js';
export { ApiServerConfigToken, apiServerConfigSchema, parseListenAddress, type ApiServerConfig, type ListenAddress } from './config.js';
export { ApiLimiterSetToken, ApiLimiters, type ApiLimiterSet } from './ratelimit/set.js';
export { ApiLimiter, type LimiterReport, type LimitedRequest } from './ratelimit/limiter.js';
export { ApiLimiterName, DEFAULT_LIMITS, parseApiRateLimit, resolveLimits, parseRate, mergeLimiterConfig, type LimiterParams } from './ratelimit/params.js';
export { ApiServerImpl, listen } from './server.js';

/** The rate limiter cell: provides ApiLimiterSetToken from --api-rate-limit and --enable-api-rate-limit. */
export const apiRateLimiterCell = module(
  'api-rate-limiter',
  'Rate limiting of API requests',
  provide(ApiLimiterSetToken, (cfg: ApiServerConfig) => new ApiLimiters(resolveLimits(cfg.apiRateLimit), cfg.enableApiRateLimit), ApiServerConfigToken),
);

/** The API server cell (includes the rate limiter): serves every route group on the socket. */
export const apiServerCell = module(
  'api-server',
  'Agent API server (unix socket, optional TCP)',
  config(ApiServerConfigToken, apiServerConfigSchema),
  apiRateLimiterCell,
  provide(ApiServerToken, ApiServerImpl, ApiServerConfigToken, ApiRoutesToken, ApiLimiterSetToken, LoggerToken, LifecycleToken),
  invoke('serve-api', (_s: ApiServer) => undefined, ApiServerToken),
);
