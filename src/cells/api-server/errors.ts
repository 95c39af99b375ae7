/** Errors of the API server cell: socket problems, rate limiting, and errors handlers raise to set a status. */
import type { FieldError, ValidationErrorBody } from '../../api/spec.js';

/** Base class of the API server's errors. */
export class ApiServerError extends Error {
  override readonly name: string = 'ApiServerError';
}

/** Another agent is already serving on the socket. */
export class SocketInUseError extends ApiServerError {
  override readonly name = 'SocketInUseError';
  constructor(readonly socketPath: string) {
    super(
      `another process is already serving the API on unix socket ${socketPath}: stop that agent first, ` +
        `or start this one with --socket-path pointing elsewhere`,
    );
  }
}

/** Something that is not a socket sits where the socket should go. */
export class NotASocketError extends ApiServerError {
  override readonly name = 'NotASocketError';
  constructor(readonly socketPath: string) {
    super(`${socketPath} exists and is not a unix socket: remove it or choose another --socket-path`);
  }
}

/** The socket's directory belongs to another user, who could replace the socket. */
export class SocketDirOwnerError extends ApiServerError {
  override readonly name = 'SocketDirOwnerError';
  constructor(readonly dir: string, readonly owner: number) {
    super(`the socket directory ${dir} belongs to uid ${owner}, not to this user: remove it, or choose another --socket-path`);
  }
}

/** A listen address that cannot be parsed. */
export class ListenAddressError extends ApiServerError {
  override readonly name = 'ListenAddressError';
  constructor(flag: string, raw: string) {
    super(`invalid --${flag} "${raw}": expected HOST:PORT or :PORT (e.g. 127.0.0.1:9234 or :9962)`);
  }
}

/**
 * The TCP API's authentication is missing or unusable (no token or client CA, a token file others
 * can read, an empty token, a certificate without its key...): the agent refuses to start.
 */
export class ApiAuthConfigError extends ApiServerError {
  override readonly name = 'ApiAuthConfigError';
  constructor(readonly flag: string, problem: string, fix: string) {
    super(`--${flag}: ${problem}; fix: ${fix}`);
  }
}

/** Two handler groups claim the same operation, or a router serves an operation the spec lacks. */
export class RouteConflictError extends ApiServerError {
  override readonly name = 'RouteConflictError';
}

/** A request the rate limiter refused; `retryAfterSec` goes into Retry-After. */
export class RateLimitedError extends ApiServerError {
  override readonly name = 'RateLimitedError';
  constructor(
    readonly api: string,
    message: string,
    readonly retryAfterSec: number,
  ) {
    super(message);
  }
}

/**
 * An error with an HTTP status; handlers throw it to answer with Cilium's Error model (a JSON
 * string holding `message`), or with `body` when given (e.g. a ValidationError). Anything else a
 * handler throws answers 500.
 */
export class HttpError extends Error {
  override readonly name = 'HttpError';
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Readonly<Record<string, string>> = {},
    readonly body?: unknown,
  ) {
    super(message);
  }
}

/** A request that does not match the spec: 400 with the ValidationError model naming the field. */
export class InvalidRequestError extends HttpError {
  constructor(readonly fieldError: Omit<FieldError, 'expected'> & { readonly expected?: string }) {
    const { field, message, expected } = fieldError;
    super(400, message, {}, { error: { message, field, ...(expected ? { expected } : {}) } } satisfies ValidationErrorBody);
  }
}

/** A 400 in the ValidationError model, naming the field as a JSON pointer (for any handler cell). */
export function badField(field: string, message: string, expected?: string): HttpError {
  return new InvalidRequestError({ field, message, ...(expected ? { expected } : {}) });
}

/** A 404 in Cilium's Error model (for any handler cell). */
export function notFound(message: string): HttpError {
  return new HttpError(404, message);
}

/** A body over --api-max-body-bytes: 413, and the connection is closed (the rest is not read). */
export class BodyTooLargeError extends HttpError {
  constructor(maxBytes: number) {
    // the limit in a header too, so a client (the CNI shim) can report it without parsing the text
    super(413, `the request body exceeds ${maxBytes} bytes (--api-max-body-bytes)`, { connection: 'close', 'x-cellium-max-body-bytes': String(maxBytes) });
  }
}

/** The agent stops while a request waits or runs: 503 (the reason every in-flight request is aborted with). */
export class ShuttingDownError extends HttpError {
  constructor() {
    super(503, 'the agent is shutting down: retry once it is back', { 'retry-after': '1' });
  }
}
