/**
 * The API spec (api/openapi.yaml) and validators built from it with ajv (JSON Schema 2020-12,
 * ajv-formats): requests (path, query and header parameters coerced from strings, then the body)
 * and responses (body by status, required headers). The agent validates every request with it and
 * the tests validate every response.
 */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import formatsModule from 'ajv-formats';
import { SpecError } from './errors.js';
import { loadApiSpec, type ApiSpec, type JsonSchema, type OperationInfo, type ParameterInfo, type ParameterLocation } from './spec-document.js';
import { toFieldError, type FieldError } from './validation-errors.js';

export * from './spec-document.js';
export * from './validation-errors.js';

/** A request as the server received it; values are raw strings (arrays for repeated query keys). */
export interface RequestInput {
  readonly path?: Readonly<Record<string, string>>;
  readonly query?: Readonly<Record<string, string | readonly string[] | undefined>>;
  /** Header names in any case. */
  readonly headers?: Readonly<Record<string, string | readonly string[] | undefined>>;
  /** The parsed body (undefined when there is none). */
  readonly body?: unknown;
  /** The media type of the body, without parameters (`application/json`); defaults to JSON. */
  readonly contentType?: string;
}

/** A validated request: parameters coerced to their schema types, defaults applied. */
export interface ValidRequest {
  readonly ok: true;
  readonly path: Record<string, unknown>;
  readonly query: Record<string, unknown>;
  readonly headers: Record<string, unknown>;
  readonly body: unknown;
  /** The media type the body was validated as (absent when there is no body). */
  readonly contentType?: string;
}

/** A request that does not match the spec. */
export interface InvalidRequest {
  readonly ok: false;
  readonly error: FieldError;
}

/** Validators for the operations of one spec. Compiled on first use and cached. */
export interface SpecValidator {
  readonly spec: ApiSpec;
  /** Validates a request of an operation. */
  request(operationId: string, input: RequestInput): ValidRequest | InvalidRequest;
  /**
   * Validates a response; returns the problems (empty when valid). A status the operation does
   * not declare is a problem; so is a body where none is declared, or a missing required header.
   */
  response(
    operationId: string,
    status: number,
    body: unknown,
    headers?: Readonly<Record<string, string | readonly string[] | number | undefined>>,
  ): FieldError[];
  /** Validates a value against a named model of `components.schemas`; returns the problems. */
  model(name: string, value: unknown): FieldError[];
}

/** A header's value by its lowercase name, whatever the case of the given names (Node's are lowercase already). */
function headerValue(headers: Readonly<Record<string, unknown>>, name: string): unknown {
  const v = headers[name];
  if (v !== undefined) return v;
  for (const [k, value] of Object.entries(headers)) if (k.toLowerCase() === name) return value;
  return undefined;
}

/** The `$id` under which the spec's component schemas are registered with ajv. */
export const SCHEMA_ID = 'cellium-api.json';

const addFormats = formatsModule.default;

/** An ajv instance for JSON Schema 2020-12 with formats and the spec's annotation keywords. */
export function createAjv(opts: { coerce?: boolean } = {}): Ajv2020 {
  const ajv = new Ajv2020({
    allErrors: false,
    verbose: true,
    strict: true,
    strictRequired: false,
    allowUnionTypes: true,
    ...(opts.coerce ? { coerceTypes: 'array' as const, useDefaults: true } : {}),
  });
  addFormats(ajv);
  ajv.addKeyword('x-cellium');
  return ajv;
}

/** Rewrites local `#/components/schemas/X` refs to `cellium-api.json#/$defs/X` (usable from any schema). */
export function rewriteRefs(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(rewriteRefs);
  if (typeof schema !== 'object' || schema === null) return schema;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema)) {
    out[k] = k === '$ref' && typeof v === 'string' ? v.replace('#/components/schemas/', `${SCHEMA_ID}#/$defs/`) : rewriteRefs(v);
  }
  return out;
}

/** Builds the validators of a spec (the default spec when none is given). */
export function createSpecValidator(spec: ApiSpec = loadApiSpec()): SpecValidator {
  const defs = { $id: SCHEMA_ID, $defs: rewriteRefs(spec.schemas) };
  const bodyAjv = createAjv();
  const paramAjv = createAjv({ coerce: true });
  bodyAjv.addSchema(defs);
  paramAjv.addSchema(defs);
  const cache = new Map<string, ValidateFunction>();
  const compiled = (ajv: Ajv2020, key: string, schema: () => JsonSchema): ValidateFunction => {
    let fn = cache.get(key);
    if (!fn) {
      fn = ajv.compile(rewriteRefs(schema()) as JsonSchema);
      cache.set(key, fn);
    }
    return fn;
  };
  const paramsSchema = (op: OperationInfo, where: ParameterLocation): JsonSchema => {
    const ps = op.parameters.filter((p) => p.in === where);
    return {
      type: 'object',
      properties: Object.fromEntries(ps.map((p) => [p.name, p.schema])),
      required: ps.filter((p) => p.required).map((p) => p.name),
    };
  };
  const byLocation = new WeakMap<OperationInfo, Readonly<Record<ParameterLocation, readonly ParameterInfo[]>>>();
  const paramsIn = (op: OperationInfo, where: ParameterLocation): readonly ParameterInfo[] => {
    let ps = byLocation.get(op);
    if (!ps) {
      const of = (w: ParameterLocation) => op.parameters.filter((p) => p.in === w);
      byLocation.set(op, (ps = { path: of('path'), query: of('query'), header: of('header') }));
    }
    return ps[where];
  };
  const check = (fn: ValidateFunction, value: unknown, root: string): FieldError | undefined =>
    fn(value) ? undefined : toFieldError(fn.errors ?? [], root);

  return {
    spec,
    request(operationId, input) {
      const op = spec.operation(operationId);
      const out: Record<ParameterLocation, Record<string, unknown>> = { path: {}, query: {}, header: {} };
      const raw: Record<ParameterLocation, Readonly<Record<string, unknown>>> = {
        path: input.path ?? {},
        query: input.query ?? {},
        header: input.headers ?? {},
      };
      for (const where of ['path', 'query', 'header'] as const) {
        const known = paramsIn(op, where);
        // nothing declared here: the empty object always validates (unknown parameters are ignored)
        if (known.length === 0) continue;
        for (const p of known) {
          const v = where === 'header' ? headerValue(raw.header, p.name) : raw[where][p.name];
          if (v === undefined) continue;
          const notDecimal = integerParam(p) ? (Array.isArray(v) ? (v as unknown[]) : [v]).find((x) => typeof x === 'string' && !DECIMAL.test(x)) : undefined;
          if (notDecimal !== undefined) {
            return { ok: false, error: fieldError(`/${where}/${p.name}`, `${JSON.stringify(notDecimal)} is not a decimal integer`, 'a decimal integer such as 12 (no exponent, hex, sign, fraction or spaces)') };
          }
          out[where][p.name] = Array.isArray(v) ? [...(v as unknown[])] : v;
        }
        const fn = compiled(paramAjv, `${operationId} ${where}`, () => paramsSchema(op, where));
        const error = check(fn, out[where], `/${where}`);
        if (error) return { ok: false, error };
      }
      const body = op.requestBody;
      const headersOut = out.header;
      if (input.body === undefined || input.body === '') {
        if (body?.required) return { ok: false, error: fieldError('/body', 'a request body is required', describeMedia(body.content)) };
        return { ok: true, path: out.path, query: out.query, headers: headersOut, body: undefined };
      }
      if (!body) return { ok: false, error: fieldError('/body', 'this operation takes no request body', 'no body') };
      const type = (input.contentType ?? 'application/json').split(';')[0]!.trim().toLowerCase();
      if (!(type in body.content)) {
        return { ok: false, error: fieldError('/header/content-type', `content type ${type} is not accepted`, describeMedia(body.content)) };
      }
      const fn = compiled(bodyAjv, `${operationId} body ${type}`, () => body.content[type]!);
      const error = check(fn, input.body, '/body');
      if (error) return { ok: false, error };
      return { ok: true, path: out.path, query: out.query, headers: headersOut, body: input.body, contentType: type };
    },
    response(operationId, status, body, headers) {
      const op = spec.operation(operationId);
      const resp = op.responses[String(status)] ?? op.responses.default;
      if (!resp) return [fieldError('/status', `${operationId} does not declare status ${status}`, Object.keys(op.responses).join(', '))];
      const problems: FieldError[] = [];
      if (headers) {
        const lower = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
        for (const h of resp.headers) {
          if (h.required && lower[h.name] === undefined) problems.push(fieldError(`/header/${h.name}`, `response header ${h.name} is required`, 'a value'));
        }
      }
      if (!resp.schema) {
        if (body !== undefined && body !== '') problems.push(fieldError('/body', `status ${status} of ${operationId} has no body`, 'no body'));
        return problems;
      }
      const fn = compiled(bodyAjv, `${operationId} response ${status}`, () => resp.schema!);
      const error = check(fn, body, '/body');
      return error ? [...problems, error] : problems;
    },
    model(name, value) {
      if (!(name in spec.schemas)) throw new SpecError(`the API spec has no model ${name}`);
      const fn = compiled(bodyAjv, `model ${name}`, () => ({ $ref: `#/components/schemas/${name}` }));
      const error = check(fn, value, '');
      return error ? [error] : [];
    },
  };
}

/** A decimal integer as a parameter's text: digits only (ajv's coercion would also take `1e3`, `0x10`, ` 12`, `12.0`). */
const DECIMAL = /^(?:0|[1-9][0-9]*)$/;

/** Whether a parameter takes integers (or arrays of them): coerced from text, so its text must be decimal. */
function integerParam(p: ParameterInfo): boolean {
  const s = p.schema as { type?: unknown; items?: { type?: unknown } };
  const t = s.type === 'array' ? s.items?.type : s.type;
  return t === 'integer' || (Array.isArray(t) && t.includes('integer'));
}

function fieldError(field: string, what: string, expected: string): FieldError {
  return { field, message: `${field}: ${what}`, expected };
}

function describeMedia(content: Readonly<Record<string, unknown>>): string {
  return Object.keys(content).join(' or ');
}
