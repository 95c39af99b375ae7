/**
 * What the API is made of: handler cells contribute an express `Router` each (one per API group:
 * endpoint, identity, policy, ...) to the `ApiRoutersToken` group; on it they serve operations of
 * api/openapi.yaml through `ApiOperations.serve`, which validates each request against the spec
 * before their handlers run. The API router mounts every group under `/v1`; the server serves it.
 */
import type { NextFunction, Request, Response, Router } from 'express';
import type { Observable } from 'rxjs';
import type { OperationInfo, SpecValidator } from '../../api/spec.js';
import { groupToken, token } from '../../hive/token.js';

/** A request that passed validation: parameters coerced to their schema types, defaults applied. */
export interface ApiInput {
  readonly operationId: string;
  readonly path: Readonly<Record<string, unknown>>;
  readonly query: Readonly<Record<string, unknown>>;
  /** Header parameters the spec declares (lower case names). */
  readonly headers: Readonly<Record<string, unknown>>;
  /** The body (parsed JSON, or the text for text/plain and application/yaml); undefined when none. */
  readonly body: unknown;
  /** The media type the body came as (undefined without a body). */
  readonly contentType: string | undefined;
  /** Aborted when the client goes away or the server stops. */
  readonly signal: AbortSignal;
}

/** What the API's middleware leave in `res.locals` for the next ones. */
export interface ApiLocals {
  /** The operation the request is for, once a route of the spec matched it. */
  apiOperation?: OperationInfo;
  /** The validated request, for the operation's handlers. */
  api: ApiInput;
}

/** The response of an API operation, its validated request in `res.locals.api`. */
export type ApiResponse = Response<unknown, ApiLocals>;

/** A handler (or middleware) of an API operation. Throw (or reject with) an error to answer through the API's error handler. */
export type ApiHandler = (req: Request, res: ApiResponse, next: NextFunction) => unknown;

/**
 * Serves operations of api/openapi.yaml on express routers, for handler cells: the request is
 * matched, its body read (for operations that take one) and validated before the handlers run.
 */
export interface ApiOperations {
  /** The compiled spec validators (compiled once per process). */
  readonly validator: SpecValidator;
  /** A new Router with the API's routing rules (case sensitive, as the spec's paths are). */
  router(): Router;
  /**
   * Serves `operationId` on `router` at its path (relative to `/v1`): validation, then `handlers`
   * in order. Throws RouteConflictError when the spec does not define the operation or the router
   * serves it already.
   */
  serve(router: Router, operationId: string, ...handlers: ApiHandler[]): void;
  /** Middleware waiting on the named rate limiter (429 with Retry-After when refused). */
  limit(name: string): ApiHandler;
  /** The operationIds `router` serves, in the order they were added. */
  servedBy(router: Router): readonly string[];
  /** Aborts the signal of every request in flight (server stop). */
  abortAll(reason: Error): void;
}

/** Token for ApiOperations. */
export const ApiOperationsToken = token<ApiOperations>('ApiOperations');

/** A router contributed by one handler cell. */
export interface ApiRouterGroup {
  /** The group's name, for errors and introspection (e.g. `endpoint`). */
  readonly name: string;
  /** Its routes, relative to `/v1`. */
  readonly router: Router;
}

/** Value group every handler cell contributes its router to: `provideInto(ApiRoutersToken, ...)`. */
export const ApiRoutersToken = groupToken<ApiRouterGroup>('ApiRouters');

/** The whole API as one express Router: mount it in any express app (the agent's own, or yours). */
export interface ApiRouter {
  /** Every group under `/v1`, then 404 / 405 / 501 and the error handler. */
  readonly router: Router;
  /** operationIds that have a handler, sorted. */
  served(): string[];
  /** Every answered request (feeds cellium_agent_api_process_time_seconds). */
  readonly requests$: Observable<RequestRecord>;
  /** Aborts every request in flight. */
  abortAll(reason: Error): void;
}

/** Token for the API router. */
export const ApiRouterToken = token<ApiRouter>('ApiRouter');

/** Where the server listens, once started. */
export interface ApiServer {
  /** The unix socket path. */
  readonly socketPath: string;
  /** `host:port` of the TCP listener when --api-listen-address is set and the server started. */
  tcpAddress(): string | undefined;
  /** operationIds that have a handler, sorted. */
  served(): string[];
  /** Every answered request. */
  readonly requests$: Observable<RequestRecord>;
}

/** One answered request. */
export interface RequestRecord {
  /** The operationId, or `-` when the path matched none. */
  readonly operationId: string;
  readonly method: string;
  /** The path template (`/v1/endpoint/{id}`), or `-`. */
  readonly path: string;
  readonly status: number;
  readonly seconds: number;
}

/** Token for the API server. */
export const ApiServerToken = token<ApiServer>('ApiServer');

// Re-exported for other cells (import a cell through its index.ts or types.ts only; its functions,
// e.g. parseListenAddress, listen and sendJsonText, through index.ts: types.ts holds no runtime code).
export { HttpError, InvalidRequestError } from './errors.js';
export type { LimiterReport } from './ratelimit/limiter.js';
export { ApiLimiterName } from './ratelimit/params.js';
export { ApiLimiterSetToken } from './ratelimit/set.js';
export type { ApiLimiterSet } from './ratelimit/set.js';
