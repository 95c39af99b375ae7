/**
 * The API as one express Router: the metrics middleware (every answered request on `requests$`),
 * the request target normalized, every handler cell's router under `/v1`, then what no route
 * answered (404 unknown path, 405 with Allow for a method the path lacks, 501 for an operation no
 * running cell serves) and the one error handler.
 */
import { Router, type RequestHandler } from 'express';
import { Subject } from 'rxjs';
import type { ApiSpec } from '../../api/spec.js';
import type { Logger } from '../../hive/logger.js';
import { apiErrorHandler } from './error-handler.js';
import { HttpError, RouteConflictError } from './errors.js';
import { ROUTER_OPTIONS } from './operations.js';
import { normalizeTarget } from './target.js';
import type { ApiLocals, ApiOperations, ApiRouter, ApiRouterGroup, RequestRecord } from './types.js';

/** What the API router is built from. */
export interface ApiRouterOptions {
  readonly ops: ApiOperations;
  readonly groups: readonly ApiRouterGroup[];
  readonly log: Logger;
}

/** Which group serves each operation; throws RouteConflictError when two do. */
export function servedOperations(ops: ApiOperations, groups: readonly ApiRouterGroup[]): Map<string, string> {
  const owner = new Map<string, string>();
  for (const g of groups) {
    for (const id of ops.servedBy(g.router)) {
      const prev = owner.get(id);
      if (prev) throw new RouteConflictError(`${id} is served twice: by route group "${prev}" and by "${g.name}"`);
      owner.set(id, g.name);
    }
  }
  return owner;
}

/** Records every answered request once its response is closed. */
function observe(requests: Subject<RequestRecord>): RequestHandler {
  return (req, res, next) => {
    const began = performance.now();
    res.once('close', () => {
      const op = (res.locals as Partial<ApiLocals>).apiOperation;
      requests.next({ operationId: op?.operationId ?? '-', method: req.method, path: op?.fullPath ?? '-', status: res.statusCode, seconds: (performance.now() - began) / 1000 });
    });
    next();
  };
}

/** Resolves dot segments and percent-escapes of the target before routing (as every URL parser would). */
const normalize: RequestHandler = (req, _res, next) => {
  const url = normalizeTarget(req.url);
  if (url === undefined) return next(new HttpError(404, `no such API path: ${req.url}`));
  req.url = url;
  next();
};

/** Answers what no route did: 404, 405 with Allow, or 501 (in the spec, served by no running cell). */
function unmatched(spec: ApiSpec): RequestHandler {
  return (req, _res, next) => {
    const path = `${req.baseUrl}${req.path}`;
    const match = spec.match(req.method, req.path);
    if (!match) return next(new HttpError(404, `no such API path: ${req.method} ${path}`));
    if (!match.operation) {
      const allow = match.allowed.map((m) => m.toUpperCase()).join(', ');
      return next(new HttpError(405, `${req.method} is not allowed on ${path} (allowed: ${allow})`, { allow }));
    }
    next(new HttpError(501, `${match.operation.operationId} is not served by this agent: the cell that handles it is not running`));
  };
}

/** Builds the API router; throws RouteConflictError when two groups serve the same operation. */
export function createApiRouter(opts: ApiRouterOptions): ApiRouter {
  const { ops, groups, log } = opts;
  const spec = ops.validator.spec;
  const served = [...servedOperations(ops, groups).keys()].sort();
  const requests = new Subject<RequestRecord>();
  const methods = new Set(spec.operations.map((o) => o.method.toUpperCase()));
  const rest = unmatched(spec);
  const router = Router(ROUTER_OPTIONS);
  router.use(observe(requests), normalize);
  // methods the spec does not use are answered before any route sees them (no HEAD answered by a GET route, no automatic OPTIONS answer)
  router.use((req, res, next) => (methods.has(req.method) ? next() : rest(req, res, next)));
  if (groups.length > 0) router.use('/v1', ...groups.map((g) => g.router));
  router.use(rest, apiErrorHandler(log));
  return {
    router,
    served: () => [...served],
    requests$: requests.asObservable(),
    abortAll: (reason) => ops.abortAll(reason),
  };
}
