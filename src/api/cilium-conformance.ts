/**
 * Cilium's API reference (shared/reference/cilium-openapi-v1.yaml, Swagger 2.0) as JSON Schema, so
 * tests can check that our answers also satisfy Cilium's models, i.e. what a Cilium client parses.
 *
 * Swagger 2.0 -> JSON Schema 2020-12: `#/definitions/X` refs point into `$defs`, `x-nullable` allows
 * null, vendor extensions and `example` are dropped, and formats become what Cilium's Go client
 * (go-swagger strfmt) really enforces when it decodes: `date-time` stays, `duration` becomes a Go
 * duration pattern, `uint16`/`uint32`/`uint64` become ranges, the rest (`uuid`, `int64`, `binary`)
 * are not checked on decode and are dropped. A bare `type: object` (no properties) accepts any value,
 * as Go's interface{} it becomes does.
 */
import { existsSync, readFileSync } from 'node:fs';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import formatsModule from 'ajv-formats';
import { parse as parseYaml } from 'yaml';
import { CiliumReferenceMissingError, SpecError } from './errors.js';
import { repoPath } from './repo-files.js';
import type { ApiSpec, HttpMethod, JsonSchema } from './spec-document.js';
import { HTTP_METHODS } from './spec-document.js';
import { toFieldError, type FieldError } from './validation-errors.js';

/** Environment variable naming another copy of Cilium's spec. */
export const CILIUM_SPEC_ENV = 'CELLIUM_CILIUM_SPEC';
/** The `$id` of the converted definitions. */
export const CILIUM_SCHEMA_ID = 'cilium-api.json';

/** An operation of Cilium's spec: its body parameter and response body schemas by status (undefined: no body). */
export interface CiliumOperation {
  readonly method: HttpMethod;
  /** Relative to the base path, e.g. `/endpoint/{id}`. */
  readonly path: string;
  /** The `in: body` parameter, when the operation takes one. */
  readonly body?: { readonly required: boolean; readonly schema: JsonSchema };
  readonly responses: Readonly<Record<string, JsonSchema | undefined>>;
}

/** Cilium's spec, converted. */
export interface CiliumSpec {
  readonly path: string;
  /** The definitions as JSON Schema 2020-12, refs pointing at `cilium-api.json#/$defs/...`. */
  readonly definitions: Readonly<Record<string, JsonSchema>>;
  readonly operations: readonly CiliumOperation[];
}

/** An operation both specs have. */
export interface SharedOperation {
  readonly operationId: string;
  readonly method: HttpMethod;
  readonly path: string;
  readonly cilium: CiliumOperation;
}

/** Validates values against Cilium's models. */
export interface CiliumValidator {
  readonly spec: CiliumSpec;
  /** Problems of `value` as Cilium's definition `name` (empty when it conforms). */
  definition(name: string, value: unknown): FieldError[];
  /**
   * Problems of a response body as Cilium's client would parse it; undefined when Cilium declares
   * no such operation or status, or no body for it (nothing to conform to).
   */
  response(method: string, path: string, status: number, body: unknown): FieldError[] | undefined;
}

/** Where Cilium's spec is: $CELLIUM_CILIUM_SPEC, else ../shared/reference/ beside the repository. */
export function ciliumReferencePath(): string {
  return process.env[CILIUM_SPEC_ENV] || repoPath('..', 'shared', 'reference', 'cilium-openapi-v1.yaml');
}

/** True when Cilium's spec is present (tests skip with CiliumReferenceMissingError's message otherwise). */
export function ciliumReferenceAvailable(path = ciliumReferencePath()): boolean {
  return existsSync(path);
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Go's time.Duration text (`5s`, `1m30s`, `250ms`, `0s`). */
const GO_DURATION = '^-?([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$|^0$';

/** Converts one Swagger 2.0 schema to JSON Schema 2020-12. */
export function swaggerToJsonSchema(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(swaggerToJsonSchema);
  if (!isObj(schema)) return schema;
  const out: Obj = {};
  for (const [k, v] of Object.entries(schema)) {
    if (k.startsWith('x-') || k === 'example' || k === 'discriminator' || k === 'format') continue;
    if (k === '$ref' && typeof v === 'string') out.$ref = v.replace('#/definitions/', `${CILIUM_SCHEMA_ID}#/$defs/`);
    else if (k === 'type' && v === 'file') continue;
    else if (k === 'properties' || k === 'patternProperties') {
      out[k] = Object.fromEntries(Object.entries(isObj(v) ? v : {}).map(([p, s]) => [p, swaggerToJsonSchema(s)]));
    } else out[k] = swaggerToJsonSchema(v);
  }
  switch (schema.format) {
    case 'date-time':
      out.format = 'date-time';
      break;
    case 'duration':
      out.pattern = GO_DURATION;
      break;
    case 'uint16':
      Object.assign(out, { minimum: 0, maximum: 65535 });
      break;
    case 'uint32':
      Object.assign(out, { minimum: 0, maximum: 4294967295 });
      break;
    case 'uint64':
      out.minimum = 0;
      break;
  }
  // go-swagger turns a bare `type: object` (no properties) into Go's interface{}: any value decodes.
  if (out.type === 'object' && Object.keys(out).every((k) => k === 'type' || k === 'description')) delete out.type;
  if (schema['x-nullable'] === true) {
    if (typeof out.type === 'string') out.type = [out.type, 'null'];
    else if (out.$ref) return { anyOf: [{ $ref: out.$ref }, { type: 'null' }] };
  }
  return out;
}

/** Loads and converts Cilium's spec; throws CiliumReferenceMissingError when it is absent. */
export function loadCiliumSpec(path = ciliumReferencePath()): CiliumSpec {
  if (!existsSync(path)) throw new CiliumReferenceMissingError(path);
  const doc = parseYaml(readFileSync(path, 'utf8')) as unknown;
  if (!isObj(doc) || doc.swagger !== '2.0' || !isObj(doc.paths) || !isObj(doc.definitions)) {
    throw new SpecError(`${path} is not a Swagger 2.0 document with paths and definitions`);
  }
  const definitions = Object.fromEntries(
    Object.entries(doc.definitions).map(([name, s]) => [name, swaggerToJsonSchema(s) as JsonSchema]),
  );
  const operations: CiliumOperation[] = [];
  for (const [p, item] of Object.entries(doc.paths)) {
    if (!isObj(item)) continue;
    for (const method of HTTP_METHODS) {
      const op = item[method];
      if (!isObj(op) || !isObj(op.responses)) continue;
      const responses: Record<string, JsonSchema | undefined> = {};
      for (const [status, r] of Object.entries(op.responses)) {
        responses[status] = isObj(r) && r.schema !== undefined ? (swaggerToJsonSchema(r.schema) as JsonSchema) : undefined;
      }
      const params = [...(Array.isArray(item.parameters) ? item.parameters : []), ...(Array.isArray(op.parameters) ? op.parameters : [])];
      const body = params.map((raw) => resolveParameter(doc, raw)).find((x) => x?.in === 'body');
      operations.push({ method, path: p, ...(body ? { body: { required: body.required === true, schema: swaggerToJsonSchema(body.schema) as JsonSchema } } : {}), responses });
    }
  }
  return { path, definitions, operations };
}

/** A parameter of Cilium's spec, its `$ref` into `parameters` resolved. */
function resolveParameter(doc: Record<string, unknown>, raw: unknown): Record<string, unknown> | undefined {
  if (!isObj(raw)) return undefined;
  const ref = typeof raw.$ref === 'string' ? /^#\/parameters\/(.+)$/.exec(raw.$ref)?.[1] : undefined;
  if (ref === undefined) return raw;
  const target = isObj(doc.parameters) ? doc.parameters[ref] : undefined;
  return isObj(target) ? target : undefined;
}

/** `/endpoint/{id}` and `/endpoint/{name}` are the same template. */
const template = (p: string): string => p.replace(/\{[^}]+\}/g, '{}');

/** The operations our spec and Cilium's both have (same method and path template). */
export function sharedOperations(ours: ApiSpec, cilium: CiliumSpec): SharedOperation[] {
  const out: SharedOperation[] = [];
  for (const op of ours.operations) {
    const theirs = cilium.operations.find((c) => c.method === op.method && template(c.path) === template(op.path));
    if (theirs) out.push({ operationId: op.operationId, method: op.method, path: op.path, cilium: theirs });
  }
  return out;
}

/** Builds validators over Cilium's converted definitions (loading the spec when not given). */
export function createCiliumValidator(spec: CiliumSpec = loadCiliumSpec()): CiliumValidator {
  // Cilium's schemas are foreign (e.g. `properties` without `type`), so not strict.
  const ajv = new Ajv2020({ strict: false, verbose: true, allowUnionTypes: true });
  formatsModule.default(ajv);
  ajv.addSchema({ $id: CILIUM_SCHEMA_ID, $defs: spec.definitions });
  const cache = new Map<string, ValidateFunction>();
  const compiled = (key: string, schema: () => unknown): ValidateFunction => {
    let fn = cache.get(key);
    if (!fn) {
      fn = ajv.compile(schema() as JsonSchema);
      cache.set(key, fn);
    }
    return fn;
  };
  const run = (fn: ValidateFunction, value: unknown): FieldError[] => (fn(value) ? [] : [toFieldError(fn.errors ?? [], '', false)]);
  return {
    spec,
    definition(name, value) {
      if (!(name in spec.definitions)) throw new SpecError(`Cilium's spec has no definition ${name}`);
      return run(compiled(`def ${name}`, () => ({ $ref: `${CILIUM_SCHEMA_ID}#/$defs/${name}` })), value);
    },
    response(method, path, status, body) {
      const m = method.toLowerCase();
      const op = spec.operations.find((o) => o.method === m && template(o.path) === template(path));
      const schema = op?.responses[String(status)];
      if (!op || !schema) return undefined;
      return run(compiled(`${m} ${op.path} ${status}`, () => schema), body);
    },
  };
}
