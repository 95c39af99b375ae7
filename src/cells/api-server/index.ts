/**
 * The API cells: `api-router` (the whole API as one express Router: every handler cell's router
 * under `/v1`, request validation from api/openapi.yaml, Cilium's API rate limiters as middleware,
 * one error handler; mountable in any express app with `apiRouter(hive)`) and `api-server` (the
 * agent's express application serving it on the unix socket, optionally TCP). Handler cells
 * contribute routers with `provideInto(ApiRoutersToken, ...)`, serving operations through
 * `ApiOperationsToken`.
 */
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
export { prepareSocket, restrictSocket, removeSocket, socketIsLive } from './socket.js';
export { loadTcpAuth, bearerAuth, tokenMatches, MIN_TOKEN_LENGTH, type TcpAuth, type ApiTlsMaterial } from './auth.js';
export * from './cell.js';
