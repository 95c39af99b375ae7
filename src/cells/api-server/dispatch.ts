/**
 * The request pipeline: match the path against api/openapi.yaml (404 / 405 in JSON otherwise), read
 * and parse the body, validate path, query, headers and body with ajv (400 naming the field as a
 * JSON pointer), wait on the operation's rate limiter (429 with Retry-After), call the handler and
 * write its answer. One node:http request listener, no framework router: the spec is the routing
 * table.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Subject, type Observable } from 'rxjs';
import type { Logger } from '../../hive/logger.js';
import { checkHttpRequest, queryRecord } from '../../api/http-check.js';
import type { OperationInfo } from '../../api/spec-document.js';
import { validationErrorBody, type FieldError, type SpecValidator } from '../../api/spec.js';
import { HttpError, RateLimitedError, RouteConflictError } from './errors.js';
import type { ApiLimiterSet } from './ratelimit/set.js';
import type { ApiRequest, ApiRoute, ApiRouteGroup, RequestRecord } from './types.js';

/** What the pipeline needs. */
export interface DispatchOptions {
  readonly validator: SpecValidator;
  readonly groups: readonly ApiRouteGroup[];
  readonly limiters: ApiLimiterSet;
  readonly log: Logger;
  readonly maxBodyBytes: number;
}

/** The request listener and what it exposes. */
export interface Dispatcher {
  /** The listener to give node:http's createServer. */
  readonly listener: (req: IncomingMessage, res: ServerResponse) => void;
  /** operationIds with a handler, sorted. */
  readonly served: readonly string[];
  /** Every answered request. */
  readonly requests$: Observable<RequestRecord>;
  /** Aborts every request in flight (server stop). */
  abortAll(reason: Error): void;
}

const JSON_TYPE = 'application/json';
/** Base for parsing request targets (only the path and query are used). */
const BASE = 'http://agent';

/** One request on its way through the pipeline. */
interface Call {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly route: ApiRoute | undefined;
  readonly op: OperationInfo;
  readonly pathParams: Readonly<Record<string, string>>;
  readonly query: URLSearchParams;
  readonly signal: () => AbortSignal;
}

/** Indexes the routes by operationId; throws RouteConflictError on an unknown or doubly served operation. */
export function indexRoutes(validator: SpecValidator, groups: readonly ApiRouteGroup[]): Map<string, ApiRoute> {
  const byOp = new Map<string, ApiRoute>();
  const owner = new Map<string, string>();
  for (const g of groups) {
    for (const r of g.routes) {
      if (!validator.spec.operations.some((o) => o.operationId === r.operationId)) {
        throw new RouteConflictError(`route group "${g.name}" serves ${r.operationId}, which api/openapi.yaml does not define`);
      }
      const prev = owner.get(r.operationId);
      if (prev) throw new RouteConflictError(`${r.operationId} is served twice: by route group "${prev}" and by "${g.name}"`);
      owner.set(r.operationId, g.name);
      byOp.set(r.operationId, r);
    }
  }
  return byOp;
}

/** Builds the pipeline. */
export function createDispatcher(opts: DispatchOptions): Dispatcher {
  const { validator, limiters, log, maxBodyBytes } = opts;
  const routes = indexRoutes(validator, opts.groups);
  const spec = validator.spec;
  const requests = new Subject<RequestRecord>();
  const inFlight = new Set<AbortController>();

  const finish = (res: ServerResponse, operationId: string, method: string, path: string, began: number): void => {
    requests.next({ operationId, method, path, status: res.statusCode, seconds: (performance.now() - began) / 1000 });
  };

  const listener = (req: IncomingMessage, res: ServerResponse): void => {
    const began = performance.now();
    const url = req.url ?? '/';
    const method = (req.method ?? 'GET').toUpperCase();
    const parsed = parseTarget(url);
    const match = parsed && spec.match(method, parsed.pathname);
    const op = match?.operation;
    if (!parsed || !match || !op) {
      // 404 / 405 answered the way src/api/http-check.ts words them for every server
      const refused = checkHttpRequest(validator, { method, url, headers: req.headers });
      if (refused.ok) send(res, 404, `no such API path: ${method} ${parsed?.pathname ?? url}`);
      else send(res, refused.status, refused.body, refused.allow ? { allow: refused.allow } : {});
      return finish(res, '-', method, '-', began);
    }
    // the abort signal (and its close listener) is made on first use: most reads never look at it
    let ac: AbortController | undefined;
    const signal = (): AbortSignal => {
      if (!ac) {
        const made = (ac = new AbortController());
        const closed = (): void => {
          inFlight.delete(made);
          if (!res.writableFinished) made.abort(new Error('the client closed the connection'));
        };
        if (res.closed) closed();
        else {
          inFlight.add(made);
          res.once('close', closed);
        }
      }
      return ac.signal;
    };
    const call: Call = { req, res, route: routes.get(op.operationId), op, pathParams: match.pathParams, query: parsed.searchParams, signal };
    void handle(call)
      .catch((err: unknown) => {
        log.error({ err, operationId: op.operationId }, 'API handler failed');
        if (!res.headersSent) send(res, 500, `${op.operationId} failed: ${(err as Error)?.message ?? String(err)}`);
        else res.destroy();
      })
      .finally(() => finish(res, op.operationId, method, op.fullPath, began));
  };

  async function handle({ req, res, route, op, pathParams, query, signal }: Call): Promise<void> {
    const operationId = op.operationId;
    // like Cilium's go-swagger server, an operation without a request body does not read one
    const raw = op.requestBody ? await readBody(req, maxBodyBytes) : skipBody(req);
    // the limit in a header too, so a client (the CNI shim) can report it without parsing the text
    if (raw === 'too-large') return send(res, 413, `the request body exceeds ${maxBodyBytes} bytes (--api-max-body-bytes)`, { connection: 'close', 'x-cellium-max-body-bytes': String(maxBodyBytes) });
    const contentType = req.headers['content-type'];
    const mediaType = (contentType ?? JSON_TYPE).split(';')[0]!.trim().toLowerCase();
    let body: unknown;
    if (raw !== undefined) {
      if (mediaType === JSON_TYPE || mediaType.endsWith('+json')) {
        try {
          body = JSON.parse(raw);
        } catch (err) {
          return sendValidation(res, { field: '/body', message: `/body is not valid JSON: ${(err as Error).message}`, expected: 'a JSON document' });
        }
      } else {
        body = raw;
      }
    }
    const checked = validator.request(operationId, {
      path: pathParams,
      query: queryRecord(query),
      headers: req.headers,
      body,
      ...(contentType !== undefined ? { contentType } : {}),
    });
    if (!checked.ok) return sendValidation(res, checked.error);
    const v = checked;
    if (!route) return send(res, 501, `${operationId} is not served by this agent: the cell that handles it is not running`);
    const apiReq: ApiRequest = {
      operationId,
      path: v.path,
      query: v.query,
      headers: v.headers,
      body: v.body,
      contentType: v.contentType,
      get signal() {
        return signal();
      },
      raw: req,
    };
    let limited;
    if (route.limiter) {
      try {
        limited = await limiters.wait(route.limiter, signal());
      } catch (err) {
        if (err instanceof RateLimitedError) return send(res, 429, err.message, { 'retry-after': String(err.retryAfterSec) });
        if (signal().aborted) return;
        throw err;
      }
    }
    try {
      const result = await route.handle(apiReq);
      if (result.json !== undefined) sendJsonText(res, result.status, result.json, result.headers);
      else send(res, result.status, result.body, result.headers);
    } catch (err) {
      if (err instanceof HttpError) send(res, err.status, err.body ?? err.message, err.headers);
      else if (err instanceof RateLimitedError) send(res, 429, err.message, { 'retry-after': String(err.retryAfterSec) });
      else throw err;
    } finally {
      limited?.done(res.statusCode);
    }
  }

  return {
    listener,
    served: [...routes.keys()].sort(),
    requests$: requests.asObservable(),
    abortAll(reason) {
      for (const ac of inFlight) ac.abort(reason);
    },
  };
}

/** A request target with nothing for URL parsing to normalize: a path of plain characters, no dot segment. */
const PLAIN_TARGET = /^\/(?![/.])(?:[A-Za-z0-9_~:@!$&'()*+,;=-]|\.(?![./?]|$)|\/(?!\.))*(?:\?[^#\s]*)?$/;

/**
 * The path and query of a request target, parsed the way checkHttpRequest parses it (WHATWG URL:
 * dot segments resolved, percent-escapes normalized) so both agree; a plain target (the usual
 * case) is split without building a URL. Undefined when it does not parse.
 */
export function parseTarget(url: string): { pathname: string; searchParams: URLSearchParams } | undefined {
  if (PLAIN_TARGET.test(url)) {
    const q = url.indexOf('?');
    return q < 0 ? { pathname: url, searchParams: new URLSearchParams() } : { pathname: url.slice(0, q), searchParams: new URLSearchParams(url.slice(q + 1)) };
  }
  try {
    return new URL(url, BASE);
  } catch {
    return undefined;
  }
}

/** Writes a JSON answer (nothing when body is undefined). */
export function send(res: ServerResponse, status: number, body: unknown, headers: Readonly<Record<string, string>> = {}): void {
  if (res.headersSent || res.destroyed) return;
  if (body === undefined) {
    res.writeHead(status, { ...headers, 'content-length': '0' });
    res.end();
    return;
  }
  sendJsonText(res, status, JSON.stringify(body), headers);
}

/** Writes an answer whose body is already JSON text. */
export function sendJsonText(res: ServerResponse, status: number, payload: string, headers: Readonly<Record<string, string>> = {}): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(status, { ...headers, 'content-type': JSON_TYPE, 'content-length': String(Buffer.byteLength(payload)) });
  res.end(payload);
}

function sendValidation(res: ServerResponse, e: FieldError): void {
  send(res, 400, validationErrorBody(e));
}

/** Drains a body nobody reads (only when one was sent); always undefined. */
function skipBody(req: IncomingMessage): undefined {
  if (req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined) req.resume();
  return undefined;
}

/** Reads the body as UTF-8 text; undefined when there is none, 'too-large' past the limit. */
function readBody(req: IncomingMessage, max: number): Promise<string | undefined | 'too-large'> {
  const declared = Number(req.headers['content-length'] ?? (req.headers['transfer-encoding'] ? NaN : 0));
  if (declared === 0) return Promise.resolve(undefined);
  if (declared > max) return Promise.resolve('too-large');
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > max) {
        req.removeAllListeners('data');
        req.resume();
        resolve('too-large');
      } else chunks.push(c);
    });
    req.on('end', () => resolve(size === 0 ? undefined : Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
