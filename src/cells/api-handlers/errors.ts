/**
 * How the handlers turn the managers' errors into answers: EndpointError, IPAMError and
 * PolicyError codes to HTTP statuses, fitted to the statuses the operation declares in the spec.
 * A 400 that knows the offending field answers with the ValidationError model (field as a JSON
 * pointer), otherwise with Cilium's Error (a JSON string). Every handler router ends with
 * `domainErrors`, which passes the mapped error on to the API's error handler.
 */
import type { ErrorRequestHandler } from 'express';
import { HttpError } from '../api-server/types.js';
import { badField } from '../api-server/index.js';
import type { ApiLocals } from '../api-server/types.js';
import { EndpointError, type EndpointErrorCode } from '../endpoint/types.js';
import { IPAMError, type IPAMErrorCode } from '../ipam/types.js';
import { PolicyError } from '../policy/types.js';

/** Status per EndpointError code (Cilium's: invalid 400, not-found 404, exists 409, rate-limited 429, failed 500). */
export const ENDPOINT_STATUS: Readonly<Record<EndpointErrorCode, number>> = {
  invalid: 400,
  'not-found': 404,
  exists: 409,
  'rate-limited': 429,
  failed: 500,
};

/** Status per IPAMError code. */
export const IPAM_STATUS: Readonly<Record<IPAMErrorCode, number>> = {
  invalid: 400,
  'outside-pool': 400,
  reserved: 400,
  'in-use': 409,
  'no-pool': 501,
  exhausted: 502,
};

/**
 * Maps a manager error to an HttpError. `allowed` lists the statuses the operation declares; a
 * status outside it falls back to 400 for client mistakes and 500 for the rest.
 */
export function toHttpError(err: unknown, allowed: readonly number[]): Error {
  if (err instanceof HttpError) return err;
  if (err instanceof EndpointError) {
    const status = fit(ENDPOINT_STATUS[err.code], allowed);
    if (status === 400 && err.field) return badField(bodyPointer(err.field), err.message);
    return new HttpError(status, err.message, status === 429 ? { 'retry-after': '1' } : {});
  }
  if (err instanceof IPAMError) return new HttpError(fit(IPAM_STATUS[err.code], allowed), err.message);
  if (err instanceof PolicyError) {
    const status = fit(err.code === 'invalid' ? 400 : 404, allowed);
    if (status === 400) return badField(bodyPointer(err.pointer || '/'), err.message, err.fix);
    return new HttpError(status, err.message);
  }
  return err instanceof Error ? err : new Error(String(err));
}

/** A pointer into the request body (`/addressing/ipv4` -> `/body/addressing/ipv4`). */
export function bodyPointer(field: string): string {
  if (field.startsWith('/body')) return field;
  return `/body${field === '/' ? '' : field}`;
}

function fit(status: number, allowed: readonly number[]): number {
  if (allowed.includes(status)) return status;
  return status < 500 && allowed.includes(400) ? 400 : 500;
}

/** The statuses an operation declares (`['200', '400', ...]` as numbers). */
function declared(locals: Partial<ApiLocals>): number[] {
  return Object.keys(locals.apiOperation?.responses ?? {}).map(Number);
}

/** Error middleware (last on each handler router): maps a manager's error to an HttpError, then hands it on. */
export const domainErrors: ErrorRequestHandler = (err: unknown, _req, res, next) => {
  next(toHttpError(err, declared(res.locals as Partial<ApiLocals>)));
};
