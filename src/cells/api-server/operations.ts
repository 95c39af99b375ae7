/**
 * Operations of api/openapi.yaml on express routers. `serve(router, 'GetEndpointID', ...handlers)`
 * adds the route at the spec's path (`/endpoint/:id`, relative to `/v1`) with one middleware in
 * front of the handlers: it reads the body (operations that take one), validates path, query,
 * headers and body with the spec's compiled ajv validators (400 naming the field otherwise) and
 * leaves the coerced values in `res.locals.api`. `limit(name)` is the rate limiter as middleware.
 */
import { Router, type NextFunction, type Request } from 'express';
import { queryRecord } from '../../api/http-check.js';
import { createSpecValidator, type OperationInfo, type SpecValidator, type ValidRequest } from '../../api/spec.js';
import { bodyReader, parseBody } from './body.js';
import { InvalidRequestError, RouteConflictError } from './errors.js';
import type { ApiLimiterSet } from './ratelimit/set.js';
import type { ApiHandler, ApiInput, ApiOperations, ApiResponse } from './types.js';

/** The options every router of the API is made with: paths are case sensitive, a trailing slash is allowed. */
export const ROUTER_OPTIONS = { caseSensitive: true, strict: false } as const;

/** An express path for a spec path template: `/endpoint/{id}` -> `/endpoint/:id`. */
export function expressPath(template: string): string {
  return template.replace(/\{([^}]+)\}/g, ':$1');
}

/**
 * Literal paths a parameter of `op` must not take, because another operation of the same method
 * has a literal there (`/identity/endpoints` beside `/identity/{id}`): the spec matches literals
 * first, whatever order the routes were added in.
 */
export function shadowedLiterals(op: OperationInfo, all: readonly OperationInfo[]): Array<readonly [string, string]> {
  const mine = op.path.split('/');
  const out: Array<readonly [string, string]> = [];
  for (const other of all) {
    const theirs = other.path.split('/');
    if (other === op || other.method !== op.method || theirs.length !== mine.length) continue;
    const param = (seg: string): string | undefined => /^\{(.+)\}$/.exec(seg)?.[1];
    const differ = mine.flatMap((seg, i) => (seg === theirs[i] || (param(seg) && param(theirs[i]!)) ? [] : [i]));
    if (differ.length === 1 && param(mine[differ[0]!]!) && !param(theirs[differ[0]!]!)) out.push([param(mine[differ[0]!]!)!, theirs[differ[0]!]!]);
  }
  return out;
}

/** The query of a request target as the validator wants it (repeated keys as arrays). */
function queryOf(url: string): Record<string, string | string[]> {
  const q = url.indexOf('?');
  return q < 0 ? {} : queryRecord(new URLSearchParams(url.slice(q + 1)));
}

let shared: SpecValidator | undefined;

/** The validators of api/openapi.yaml, compiled once per process and shared by every router. */
export function sharedSpecValidator(): SpecValidator {
  return (shared ??= createSpecValidator());
}

/** What ApiOperations is made of. */
export interface OperationsOptions {
  readonly validator: SpecValidator;
  readonly limiters: ApiLimiterSet;
  readonly maxBodyBytes: number;
}

/** The default ApiOperations. */
export class SpecOperations implements ApiOperations {
  /** See ApiOperations. */
  readonly validator: SpecValidator;
  private readonly limiters: ApiLimiterSet;
  private readonly readBody: (req: Request, res: ApiResponse, next: NextFunction) => void;
  private readonly served = new WeakMap<Router, string[]>();
  private readonly inFlight = new Set<AbortController>();

  constructor(opts: OperationsOptions) {
    this.validator = opts.validator;
    this.limiters = opts.limiters;
    this.readBody = bodyReader(opts.maxBodyBytes);
  }

  /** See ApiOperations. */
  router(): Router {
    return Router(ROUTER_OPTIONS);
  }

  /** See ApiOperations. */
  servedBy(router: Router): readonly string[] {
    return this.served.get(router) ?? [];
  }

  /** See ApiOperations. */
  serve(router: Router, operationId: string, ...handlers: ApiHandler[]): void {
    const op = this.validator.spec.operations.find((o) => o.operationId === operationId);
    if (!op) throw new RouteConflictError(`a router serves ${operationId}, which api/openapi.yaml does not define`);
    const served = this.served.get(router) ?? [];
    if (served.includes(operationId)) throw new RouteConflictError(`${operationId} is served twice by the same router`);
    this.served.set(router, [...served, operationId]);
    const chain = op.requestBody ? [this.prepare(op, true), this.readBody, this.prepare(op, false)] : [this.prepare(op, false)];
    router.route(expressPath(op.path))[op.method](...(chain as ApiHandler[]), ...handlers);
  }

  /** See ApiOperations. */
  limit(name: string): ApiHandler {
    return (_req, res, next) => {
      this.limiters.wait(name, res.locals.api.signal).then(
        (limited) => {
          res.once('close', () => limited.done(res.statusCode));
          next();
        },
        // refused (RateLimitedError, 429) or aborted (the signal's reason): the error handler answers
        (err: unknown) => next(err),
      );
    };
  }

  /** See ApiOperations. */
  abortAll(reason: Error): void {
    for (const ac of this.inFlight) ac.abort(reason);
  }

  /**
   * The middleware in front of an operation's handlers. `matchOnly` (before the body is read): checks
   * the route really is this operation (the method, not HEAD for GET; no literal path of another
   * operation) and records the operation; otherwise validates the request into `res.locals.api`.
   */
  private prepare(op: OperationInfo, matchOnly: boolean): ApiHandler {
    const method = op.method.toUpperCase();
    const shadowed = shadowedLiterals(op, this.validator.spec.operations);
    const check = (req: Request, res: ApiResponse): boolean => {
      if (req.method !== method) return false;
      for (const [name, literal] of shadowed) if (req.params[name] === literal) return false;
      res.locals.apiOperation = op;
      return true;
    };
    if (matchOnly) return (req, res, next) => next(check(req, res) ? undefined : 'route');
    const hasBody = op.requestBody !== undefined;
    return (req, res, next) => {
      if (!hasBody && !check(req, res)) return next('route');
      const contentType = req.headers['content-type'];
      const parsed = hasBody ? parseBody(req.body, contentType) : { body: undefined };
      if ('error' in parsed) return next(new InvalidRequestError(parsed.error));
      const v = this.validator.request(op.operationId, {
        path: req.params as Record<string, string>,
        query: queryOf(req.url),
        headers: req.headers,
        body: parsed.body,
        ...(contentType !== undefined ? { contentType } : {}),
      });
      if (!v.ok) return next(new InvalidRequestError(v.error));
      const input = new ValidatedInput(op.operationId, v, res, this.inFlight);
      res.locals.api = input;
      next();
    };
  }
}

/** The validated request handlers read from `res.locals.api`; its abort signal is made on first use (most handlers never look at it). */
class ValidatedInput implements ApiInput {
  readonly path: Readonly<Record<string, unknown>>;
  readonly query: Readonly<Record<string, unknown>>;
  readonly headers: Readonly<Record<string, unknown>>;
  readonly body: unknown;
  readonly contentType: string | undefined;
  private controller: AbortController | undefined;

  constructor(
    readonly operationId: string,
    v: ValidRequest,
    private readonly res: ApiResponse,
    private readonly inFlight: Set<AbortController>,
  ) {
    this.path = v.path;
    this.query = v.query;
    this.headers = v.headers;
    this.body = v.body;
    this.contentType = v.contentType;
  }

  /** Aborted when the client goes away, or by abortAll (server stop). */
  get signal(): AbortSignal {
    if (!this.controller) {
      const ac = (this.controller = new AbortController());
      const res = this.res;
      const closed = (): void => {
        this.inFlight.delete(ac);
        if (!res.writableFinished) ac.abort(new Error('the client closed the connection'));
      };
      if (res.closed) closed();
      else {
        this.inFlight.add(ac);
        res.once('close', closed);
      }
    }
    return this.controller.signal;
  }
}
