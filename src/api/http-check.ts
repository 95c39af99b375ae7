/**
 * One call from a raw HTTP request to a validated API request, for servers of any framework: finds
 * the operation (404 / 405 otherwise), then validates path, query, headers and body (400 with a
 * ValidationError otherwise). The agent's server and the tests' fake agents answer the same way.
 */
import type { OperationInfo } from './spec-document.js';
import type { SpecValidator, ValidRequest } from './spec.js';
import { validationErrorBody, type ValidationErrorBody } from './validation-errors.js';

/** A request as read off the wire. */
export interface HttpRequestInput {
  readonly method: string;
  /** The request target, with the query string (`/v1/endpoint?x=1`). */
  readonly url: string;
  /** Node's headers (lower-case names). */
  readonly headers: Readonly<Record<string, string | readonly string[] | undefined>>;
  /** The parsed body: JSON value, text, or undefined when empty. */
  readonly body?: unknown;
}

/** The outcome: the operation and the validated request, or the answer to send. */
export type CheckedHttpRequest =
  | { readonly ok: true; readonly operation: OperationInfo; readonly request: ValidRequest }
  | {
      readonly ok: false;
      readonly status: 400 | 404 | 405;
      /** Error string (404, 405) or ValidationError (400), to send as JSON. */
      readonly body: string | ValidationErrorBody;
      /** The Allow header of a 405. */
      readonly allow?: string;
      /** The operation, when the path and method matched one. */
      readonly operation?: OperationInfo;
    };

/** The query string as the validator wants it: repeated keys become arrays. */
export function queryRecord(search: URLSearchParams): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const key of new Set(search.keys())) {
    const all = search.getAll(key);
    out[key] = all.length === 1 ? all[0]! : all;
  }
  return out;
}

/** Matches and validates one HTTP request against the spec. */
export function checkHttpRequest(validator: SpecValidator, input: HttpRequestInput): CheckedHttpRequest {
  let url: URL;
  try {
    url = new URL(input.url, 'http://agent');
  } catch {
    return { ok: false, status: 404, body: `no such API path: ${input.url}` };
  }
  const method = input.method.toUpperCase();
  const match = validator.spec.match(method, url.pathname);
  if (!match) return { ok: false, status: 404, body: `no such API path: ${method} ${url.pathname}` };
  const operation = match.operation;
  if (!operation) {
    const allow = match.allowed.map((m) => m.toUpperCase()).join(', ');
    return { ok: false, status: 405, body: `${method} is not allowed on ${url.pathname} (allowed: ${allow})`, allow };
  }
  const contentType = input.headers['content-type'];
  const checked = validator.request(operation.operationId, {
    path: match.pathParams,
    query: queryRecord(url.searchParams),
    headers: input.headers,
    body: input.body,
    ...(typeof contentType === 'string' ? { contentType } : {}),
  });
  if (!checked.ok) return { ok: false, status: 400, body: validationErrorBody(checked.error), operation };
  return { ok: true, operation, request: checked };
}
