/**
 * What handler cells give the API server: route groups, one per API group (endpoint, identity,
 * policy, ...), each mapping operationIds of api/openapi.yaml to thin handlers. A handler gets the
 * request already validated against the spec and returns a status and a body.
 */
import type { IncomingMessage } from 'node:http';
import type { Observable } from 'rxjs';
import { groupToken, token } from '../../hive/token.js';

/** A request that passed validation: parameters coerced to their schema types. */
export interface ApiRequest {
  readonly operationId: string;
  readonly path: Readonly<Record<string, unknown>>;
  readonly query: Readonly<Record<string, unknown>>;
  /** Header parameters the spec declares (lower case names). */
  readonly headers: Readonly<Record<string, unknown>>;
  /** The body (parsed JSON, or the text for text/plain and application/yaml); undefined when none. */
  readonly body: unknown;
  /** The media type the body came as. */
  readonly contentType?: string;
  /** Aborted when the client goes away or the server stops. */
  readonly signal: AbortSignal;
  /** The underlying request (for logging). */
  readonly raw: IncomingMessage;
}

/** A handler's answer. No body (undefined) answers with an empty body. */
export interface ApiResult {
  readonly status: number;
  readonly body?: unknown;
  /** The body already serialized as JSON text (sent as is, instead of `body`). */
  readonly json?: string;
  readonly headers?: Readonly<Record<string, string>>;
}

/** Handles one operation. Throw HttpError to answer with Cilium's Error model; anything else is a 500. */
export type ApiHandler = (req: ApiRequest) => ApiResult | Promise<ApiResult>;

/** One operation served by a group. */
export interface ApiRoute {
  /** The operationId in api/openapi.yaml (e.g. `PutEndpointID`). */
  readonly operationId: string;
  /** The rate limiter it waits on (e.g. `endpoint-create`), if any. */
  readonly limiter?: string;
  readonly handle: ApiHandler;
}

/** A group of routes contributed by one handler cell. */
export interface ApiRouteGroup {
  /** The group's name, for errors and introspection (e.g. `endpoint`). */
  readonly name: string;
  readonly routes: readonly ApiRoute[];
}

/** Value group every handler cell contributes its routes to: `provideInto(ApiRoutesToken, ...)`. */
export const ApiRoutesToken = groupToken<ApiRouteGroup>('ApiRoutes');

/** Where the server listens, once started. */
export interface ApiServer {
  /** The unix socket path. */
  readonly socketPath: string;
  /** `host:port` of the TCP listener when --api-listen-address is set and the server started. */
  tcpAddress(): string | undefined;
  /** operationIds that have a handler, sorted. */
  served(): string[];
  /** Every answered request (feeds cellium_agent_api_process_time_seconds). */
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

/** A `200` answer with a JSON body. */
export function ok(body?: unknown): ApiResult {
  return body === undefined ? { status: 200 } : { status: 200, body };
}

/** A `201` answer with a JSON body. */
export function created(body: unknown): ApiResult {
  return { status: 201, body };
}
