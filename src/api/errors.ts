/** Errors of the API client, the spec loader and the Cilium conformance helper. */

/** The agent answered with an error status; `message` is the server's message. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    /** The HTTP status. */
    readonly status: number,
    message: string,
    /** The offending request field (JSON pointer such as `/body/addressing/ipv4`) for a 400 ValidationError. */
    readonly field?: string,
    /** What the spec expected at `field`. */
    readonly expected?: string,
    /** Seconds to wait before retrying (429). */
    readonly retryAfter?: number,
  ) {
    super(message);
  }
}

/** The agent could not be reached at all (no socket, connection refused, permission denied). */
export class AgentUnreachableError extends Error {
  override readonly name = 'AgentUnreachableError';
  constructor(
    /** What was tried: `unix socket /path` or `http://host:port`. */
    readonly target: string,
    /** The system error code (ENOENT, ECONNREFUSED, EACCES, ETIMEDOUT, ...). */
    readonly code: string,
    /** How to start the agent so that it listens there. */
    readonly hint: string,
  ) {
    super(`cannot reach the cellium agent at ${target} (${describeCode(code)}); ${hint}`);
  }
}

/** The answer did not make sense (not JSON when JSON was expected, or truncated). */
export class ProtocolError extends Error {
  override readonly name = 'ProtocolError';
}

/** api/openapi.yaml could not be found or does not describe what was asked (unknown operation). */
export class SpecError extends Error {
  override readonly name = 'SpecError';
}

/** shared/reference/cilium-openapi-v1.yaml is not there (the repository was cloned without shared/). */
export class CiliumReferenceMissingError extends Error {
  override readonly name = 'CiliumReferenceMissingError';
  constructor(readonly path: string) {
    super(
      `Cilium's API reference is not at ${path}: clone the repository with shared/ beside it ` +
        `(shared/reference/cilium-openapi-v1.yaml) or set CELLIUM_CILIUM_SPEC to the file`,
    );
  }
}

const CODES: Readonly<Record<string, string>> = {
  ENOENT: 'no such socket',
  ECONNREFUSED: 'connection refused: no agent is listening',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  ETIMEDOUT: 'timed out',
  ENOTSOCK: 'not a socket',
  ECONNRESET: 'connection reset',
  EHOSTUNREACH: 'host unreachable',
};

function describeCode(code: string): string {
  const text = CODES[code];
  return text ? `${code}: ${text}` : code;
}
