/**
 * Request bodies, read only for operations that take one (like Cilium's go-swagger server): express's
 * text parser reads any media type up to --api-max-body-bytes (a declared length over it is refused
 * before reading), then JSON media types are parsed, others (YAML, text) stay text.
 */
import express, { type NextFunction, type Request, type Response } from 'express';
import type { FieldError } from '../../api/spec.js';
import { JsonInputError, MAX_JSON_DEPTH, parseJsonStrict } from '../../lib/json-strict.js';
import { BodyTooLargeError } from './errors.js';

/** The default media type of a body sent without Content-Type. */
export const JSON_TYPE = 'application/json';

/** Middleware reading the body as text into `req.body` (left alone when the app's own parser already read it). */
export function bodyReader(maxBytes: number): (req: Request, res: Response, next: NextFunction) => void {
  const text = express.text({ type: () => true, limit: maxBytes, defaultCharset: 'utf-8' });
  return (req, res, next) => {
    if (Number(req.headers['content-length']) > maxBytes) return next(new BodyTooLargeError(maxBytes));
    text(req, res, next);
  };
}

/** The media type of a Content-Type header, lower case, without parameters (JSON when absent). */
export function mediaType(contentType: string | undefined): string {
  return contentType === undefined ? JSON_TYPE : contentType.split(';')[0]!.trim().toLowerCase();
}

/**
 * The body to validate: JSON text parsed for JSON media types (strictly: a key given twice in one
 * object, or nesting deeper than MAX_JSON_DEPTH, is refused), other text as it is, nothing for an
 * empty body; a value another parser of the app produced is taken as the parsed JSON. A FieldError
 * on `/body` (or where in it) when the JSON does not parse or is refused.
 */
export function parseBody(raw: unknown, contentType: string | undefined): { body: unknown } | { error: FieldError } {
  if (typeof raw !== 'string') return { body: raw };
  if (raw === '') return { body: undefined };
  const type = mediaType(contentType);
  if (type !== JSON_TYPE && !type.endsWith('+json')) return { body: raw };
  try {
    return { body: parseJsonStrict(raw) };
  } catch (err) {
    if (!(err instanceof JsonInputError)) throw err;
    if (!err.pointer) return { error: { field: '/body', message: `/body is not valid JSON: ${err.problem}`, expected: 'a JSON document' } };
    const field = `/body${err.pointer}`;
    return { error: { field, message: `${field}: ${err.problem}`, expected: `a JSON document with each key once per object, at most ${MAX_JSON_DEPTH} levels deep` } };
  }
}
