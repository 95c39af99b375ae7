/** Errors of the endpoint cells, with a code the API maps to a status. */

/** What went wrong: 400 invalid, 404 not-found, 409 exists, 429 rate-limited, 500 failed. */
export type EndpointErrorCode = 'invalid' | 'not-found' | 'exists' | 'rate-limited' | 'failed';

/** An endpoint error; `field` is the offending field of the request (JSON pointer) when known. */
export class EndpointError extends Error {
  override readonly name = 'EndpointError';
  constructor(
    readonly code: EndpointErrorCode,
    message: string,
    readonly field?: string,
  ) {
    super(message);
  }
}
