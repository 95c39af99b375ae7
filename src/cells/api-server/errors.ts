/** Errors of the API server cell: socket problems, rate limiting, and errors handlers raise to set a status. */

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

/** Two handler groups claim the same operation, or a group names an operation the spec lacks. */
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
