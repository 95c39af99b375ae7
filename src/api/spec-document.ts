/**
 * api/openapi.yaml as data: the document, its operations (parameters, bodies, responses with
 * `$ref`s resolved one level) and matching of a request path to an operation.
 */
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { SpecError } from './errors.js';
import { repoPath } from './repo-files.js';

/** The API's base path (the spec's `servers[0].url`). */
export const API_BASE_PATH = '/v1';

/** HTTP methods the spec uses, lower case as in OpenAPI. */
export type HttpMethod = 'get' | 'put' | 'post' | 'delete' | 'patch';
/** Every method an OpenAPI path item may hold that we look at. */
export const HTTP_METHODS: readonly HttpMethod[] = ['get', 'put', 'post', 'delete', 'patch'];

/** A JSON Schema (2020-12) as it appears in the spec. */
export type JsonSchema = Readonly<Record<string, unknown>>;

/** Where a parameter goes. */
export type ParameterLocation = 'path' | 'query' | 'header';

/** One parameter of an operation (`$ref` resolved). Header names are lower case. */
export interface ParameterInfo {
  readonly name: string;
  readonly in: ParameterLocation;
  readonly required: boolean;
  readonly schema: JsonSchema;
  readonly description?: string;
}

/** One response of an operation: its JSON body schema (when it has a body) and its headers. */
export interface ResponseInfo {
  readonly description: string;
  readonly schema?: JsonSchema;
  readonly headers: readonly ParameterInfo[];
}

/** One operation of the spec. */
export interface OperationInfo {
  readonly operationId: string;
  readonly method: HttpMethod;
  /** The path template relative to the base path, e.g. `/endpoint/{id}`. */
  readonly path: string;
  /** The full path template, e.g. `/v1/endpoint/{id}`. */
  readonly fullPath: string;
  readonly summary: string;
  /** True for Cellium's own operations (`x-cellium: true`). */
  readonly cellium: boolean;
  readonly parameters: readonly ParameterInfo[];
  /** Body schemas by media type (e.g. `application/json`), when the operation takes a body. */
  readonly requestBody?: { readonly required: boolean; readonly content: Readonly<Record<string, JsonSchema>> };
  /** Responses by status code (`200`, `429`, ...). */
  readonly responses: Readonly<Record<string, ResponseInfo>>;
}

/** What a request path matched: the operation for the method (if any) and the path parameters. */
export interface PathMatch {
  readonly operation?: OperationInfo;
  /** Path parameters, percent-decoded. */
  readonly pathParams: Readonly<Record<string, string>>;
  /** The methods the matched path supports (for 405 answers). */
  readonly allowed: readonly HttpMethod[];
}

/** The loaded spec. */
export interface ApiSpec {
  /** The parsed document. */
  readonly document: Readonly<Record<string, unknown>>;
  /** `components.schemas`. */
  readonly schemas: Readonly<Record<string, JsonSchema>>;
  readonly operations: readonly OperationInfo[];
  /** The operation with this id; throws SpecError when there is none. */
  operation(operationId: string): OperationInfo;
  /** Matches a request path (with or without the query string) under the base path. */
  match(method: string, urlPath: string): PathMatch | undefined;
}

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The default location of the spec: api/openapi.yaml in the repository. */
export function defaultSpecPath(): string {
  return repoPath('api', 'openapi.yaml');
}

let cached: ApiSpec | undefined;

/** Loads and indexes the spec (the default one is loaded once and cached). */
export function loadApiSpec(path?: string): ApiSpec {
  if (path === undefined && cached) return cached;
  const file = path ?? defaultSpecPath();
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new SpecError(`cannot read the API spec at ${file}: ${(err as Error).message}`);
  }
  const spec = indexSpec(parseYaml(text) as unknown, file);
  if (path === undefined) cached = spec;
  return spec;
}

/** Indexes an already parsed OpenAPI 3.1 document. */
export function indexSpec(document: unknown, source = 'the API spec'): ApiSpec {
  if (!isObj(document) || !isObj(document.paths)) throw new SpecError(`${source} has no paths`);
  const doc = document;
  const components = isObj(doc.components) ? doc.components : {};
  const resolve = (v: unknown): Obj => {
    if (!isObj(v)) return {};
    const ref = v.$ref;
    if (typeof ref !== 'string') return v;
    const m = /^#\/components\/(\w+)\/([^/]+)$/.exec(ref);
    const section = m ? components[m[1]!] : undefined;
    const target = m && isObj(section) ? section[m[2]!] : undefined;
    if (!isObj(target)) throw new SpecError(`${source}: unresolvable $ref ${ref}`);
    return target;
  };
  const param = (raw: unknown, fallbackName = ''): ParameterInfo => {
    const p = resolve(raw);
    const where = p.in as ParameterLocation;
    const name = String(p.name ?? fallbackName);
    return {
      name: where === 'header' ? name.toLowerCase() : name,
      in: where,
      required: p.required === true,
      schema: isObj(p.schema) ? p.schema : {},
      ...(typeof p.description === 'string' ? { description: p.description } : {}),
    };
  };
  const operations: OperationInfo[] = [];
  for (const [path, rawItem] of Object.entries(doc.paths as Obj)) {
    const item = resolve(rawItem);
    const shared = Array.isArray(item.parameters) ? item.parameters.map((p) => param(p)) : [];
    for (const method of HTTP_METHODS) {
      const op = item[method];
      if (!isObj(op)) continue;
      const own = Array.isArray(op.parameters) ? op.parameters.map((p) => param(p)) : [];
      const parameters = [...shared.filter((s) => !own.some((o) => o.name === s.name && o.in === s.in)), ...own];
      const responses: Record<string, ResponseInfo> = {};
      for (const [status, rawResp] of Object.entries(isObj(op.responses) ? op.responses : {})) {
        const r = resolve(rawResp);
        const content = isObj(r.content) ? r.content : {};
        // a JSON body, or a stream of JSON lines whose schema is that of each line (the monitor)
        const media = content['application/json'] ?? content['application/x-ndjson'];
        const json = isObj(media) ? media : undefined;
        const headers = Object.entries(isObj(r.headers) ? r.headers : {}).map(([name, h]) =>
          param({ ...resolve(h), name, in: 'header' }),
        );
        responses[status] = {
          description: String(r.description ?? ''),
          ...(json && isObj(json.schema) ? { schema: json.schema } : {}),
          headers,
        };
      }
      const body = isObj(op.requestBody) ? resolve(op.requestBody) : undefined;
      const bodyContent: Record<string, JsonSchema> = {};
      for (const [type, media] of Object.entries(body && isObj(body.content) ? body.content : {})) {
        bodyContent[type] = isObj(media) && isObj(media.schema) ? media.schema : {};
      }
      if (typeof op.operationId !== 'string') throw new SpecError(`${source}: ${method} ${path} has no operationId`);
      operations.push({
        operationId: op.operationId,
        method,
        path,
        fullPath: API_BASE_PATH + path,
        summary: String(op.summary ?? ''),
        cellium: op['x-cellium'] === true,
        parameters,
        ...(body ? { requestBody: { required: body.required === true, content: bodyContent } } : {}),
        responses,
      });
    }
  }
  const byId = new Map(operations.map((o) => [o.operationId, o]));
  const matchers = buildMatchers(operations);
  return {
    document: doc,
    schemas: (isObj(components.schemas) ? components.schemas : {}) as Record<string, JsonSchema>,
    operations,
    operation(operationId) {
      const op = byId.get(operationId);
      if (!op) throw new SpecError(`${source} has no operation ${operationId}`);
      return op;
    },
    match(method, urlPath) {
      const path = urlPath.split('?')[0]!;
      if (!path.startsWith(API_BASE_PATH + '/')) return undefined;
      const rest = path.slice(API_BASE_PATH.length);
      for (const m of matchers) {
        const found = m.regex.exec(rest);
        if (!found) continue;
        const pathParams: Record<string, string> = {};
        try {
          m.names.forEach((n, i) => (pathParams[n] = decodeURIComponent(found[i + 1]!)));
        } catch {
          return undefined;
        }
        const operation = m.ops.get(method.toLowerCase() as HttpMethod);
        return { ...(operation ? { operation } : {}), pathParams, allowed: [...m.ops.keys()] };
      }
      return undefined;
    },
  };
}

interface Matcher {
  readonly regex: RegExp;
  readonly names: readonly string[];
  readonly ops: Map<HttpMethod, OperationInfo>;
}

/** One regex per path template; literal segments win over parameters (`/identity/endpoints`). */
function buildMatchers(operations: readonly OperationInfo[]): Matcher[] {
  const byPath = new Map<string, Matcher>();
  for (const op of operations) {
    let m = byPath.get(op.path);
    if (!m) {
      const names: string[] = [];
      const source = op.path
        .split('/')
        .map((seg) => {
          const p = /^\{(.+)\}$/.exec(seg);
          if (!p) return seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
          names.push(p[1]!);
          return '([^/]+)';
        })
        .join('/');
      m = { regex: new RegExp(`^${source}/?$`), names, ops: new Map() };
      byPath.set(op.path, m);
    }
    m.ops.set(op.method, op);
  }
  return [...byPath.values()].sort((a, b) => a.names.length - b.names.length);
}
