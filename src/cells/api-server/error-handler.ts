/**
 * The API's one error handler: every error of every route (handlers, validation, rate limiting, body
 * reading, routing) is answered here, in Cilium's `Error` model (a JSON string holding the message)
 * or, for a request that does not match the spec, our ValidationError naming the field.
 */
import type { ErrorRequestHandler } from 'express';
import type { Logger } from '../../hive/logger.js';
import { BodyTooLargeError, HttpError, InvalidRequestError, RateLimitedError } from './errors.js';
import type { ApiLocals } from './types.js';

/** How an error is answered. */
export interface ErrorAnswer {
  readonly status: number;
  /** An Error string, or a ValidationError object. */
  readonly body: unknown;
  readonly headers: Readonly<Record<string, string>>;
}

/** What express's body parser (http-errors) and router put on their errors. */
interface FrameworkError {
  readonly status?: number;
  readonly type?: string;
  readonly limit?: number;
  readonly message?: string;
}

/**
 * The answer to an error, or undefined when there is nobody to answer (the client went away while
 * its body was read). Errors of express's body parser and router become our errors; anything else
 * is a 500 naming the operation.
 */
export function errorAnswer(err: unknown, operationId: string | undefined): ErrorAnswer | undefined {
  const known = asHttpError(err);
  if (known === null) return undefined;
  if (known) return { status: known.status, body: known.body ?? known.message, headers: known.headers };
  const message = err instanceof Error ? err.message : String(err);
  return { status: 500, body: `${operationId ?? 'the request'} failed: ${message}`, headers: {} };
}

/** The HttpError an error stands for; null for an aborted body read; undefined when it is unexpected. */
function asHttpError(err: unknown): HttpError | null | undefined {
  if (err instanceof HttpError) return err;
  if (err instanceof RateLimitedError) return new HttpError(429, err.message, { 'retry-after': String(err.retryAfterSec) });
  const e = (typeof err === 'object' && err !== null ? err : {}) as FrameworkError;
  switch (e.type) {
    case 'request.aborted':
      return null;
    case 'entity.too.large':
      return new BodyTooLargeError(e.limit ?? 0);
    case 'charset.unsupported':
      return new InvalidRequestError({ field: '/header/content-type', message: `/header/content-type: ${e.message}`, expected: 'a charset such as utf-8' });
    case 'encoding.unsupported':
      return new InvalidRequestError({ field: '/header/content-encoding', message: `/header/content-encoding: ${e.message}`, expected: 'identity, gzip, deflate or br' });
    case 'request.size.invalid':
      return new InvalidRequestError({ field: '/header/content-length', message: `/header/content-length: ${e.message}`, expected: 'the length of the body' });
  }
  // the router's own refusals (a path parameter that is not valid percent-encoding) and other client errors
  if (e.status !== undefined && e.status >= 400 && e.status < 500) return new HttpError(e.status, `malformed request: ${e.message}`);
  return undefined;
}

/** The error handler (the last middleware of the API router). Unexpected errors are logged. */
export function apiErrorHandler(log: Logger): ErrorRequestHandler {
  return (err: unknown, req, res, _next) => {
    const locals = res.locals as Partial<ApiLocals>;
    const operationId = locals.apiOperation?.operationId;
    const answer = res.headersSent || res.destroyed ? undefined : errorAnswer(err, operationId);
    if (!answer) {
      // mid-answer, or nobody listening: all that is left is to close the connection
      res.destroy();
      return;
    }
    if (answer.status >= 500 && !(err instanceof HttpError)) log.error({ err, operationId, method: req.method, url: req.originalUrl }, 'API request failed');
    res.status(answer.status).set(answer.headers).json(answer.body);
  };
}
