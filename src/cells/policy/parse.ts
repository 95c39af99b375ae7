/**
 * Policy input: JSON or YAML text holding a CiliumNetworkPolicy, a CiliumClusterwideNetworkPolicy,
 * a List of them (or several YAML documents), a bare rules array or one bare rule. Validated with
 * ajv against schema.ts; the first problem is reported as a PolicyError with its JSON pointer.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { JsonInputError, parseJsonStrict } from '../../lib/json-strict.js';
import { parseYamlDocuments, YamlInputError } from '../../lib/yaml-documents.js';
import { inDocument, invalidField, PolicyError, unparsable } from './errors.js';
import { resourceSchema, ruleSchema } from './schema.js';

/** Where a rule came from. */
export interface RuleSource {
  readonly kind: 'CiliumNetworkPolicy' | 'CiliumClusterwideNetworkPolicy' | 'NetworkPolicy';
  readonly name: string;
  readonly namespace?: string;
  readonly uid?: string;
}

/** One validated rule spec with its origin. */
export interface RuleInput {
  readonly spec: Readonly<Record<string, unknown>>;
  /** JSON pointer of the rule in its document (`/spec`, `/specs/1`, `/3`, `/items/0/spec`). */
  readonly pointer: string;
  readonly document?: number;
  readonly resource?: RuleSource;
}

/**
 * The rule and resource validators, compiled on first use: compiling the rule schema takes about
 * a second, which an agent without policy to parse, and every CLI command, would pay at start.
 */
let compiled: { readonly rule: ValidateFunction; readonly resource: ValidateFunction } | undefined;
let ajv: Ajv | undefined;
function validators(): NonNullable<typeof compiled> {
  ajv ??= new Ajv({ allErrors: false, verbose: true, strict: false });
  compiled ??= { rule: ajv.compile(ruleSchema), resource: ajv.compile(resourceSchema) };
  return compiled;
}

const others = new WeakMap<object, ValidateFunction>();

/**
 * Validates a value against another JSON schema (e.g. a Kubernetes NetworkPolicy's) with the same
 * ajv settings and error wording as policy input; throws PolicyError at `pointer` + the field.
 */
export function validateSchema(schema: object, value: unknown, pointer = ''): void {
  ajv ??= new Ajv({ allErrors: false, verbose: true, strict: false });
  let validate = others.get(schema);
  if (!validate) others.set(schema, (validate = ajv.compile(schema)));
  check(validate, value, pointer);
}

/** Parses and validates policy text; throws PolicyError naming the first bad field. */
export function parsePolicyText(text: string): RuleInput[] {
  if (typeof text !== 'string' || text.trim() === '') throw unparsable('empty input');
  const docs = readDocuments(text);
  const out: RuleInput[] = [];
  docs.forEach((doc, i) => {
    const document = docs.length > 1 ? i + 1 : undefined;
    try {
      collect(doc, '', out, document);
    } catch (err) {
      throw err instanceof PolicyError && document ? inDocument(err, document) : err;
    }
  });
  if (out.length === 0) throw invalidField('', 'no rules found', 'give at least one rule (a spec, specs, or an array of rules)');
  return out;
}

/**
 * The documents of policy text: JSON (strictly: no key twice, bounded nesting), else YAML (several
 * documents; no key twice, no alias bomb, bounded nesting). Throws PolicyError `unparsable`.
 */
function readDocuments(text: string): unknown[] {
  try {
    return [parseJsonStrict(text)];
  } catch (err) {
    // valid JSON with a repeated key or too deep: refused; not JSON at all: read as YAML
    if (err instanceof JsonInputError && err.pointer) throw unparsable(err.message);
  }
  try {
    return parseYamlDocuments(text).map((d) => d.value);
  } catch (err) {
    if (!(err instanceof YamlInputError)) throw err;
    throw unparsable(err.document > 1 ? err.message : err.problem);
  }
}

function collect(doc: unknown, pointer: string, out: RuleInput[], document: number | undefined): void {
  if (Array.isArray(doc)) {
    doc.forEach((item, i) => collect(item, `${pointer}/${i}`, out, document));
    return;
  }
  if (doc === null || typeof doc !== 'object') {
    throw invalidField(pointer, `expected an object or an array, got ${JSON.stringify(doc)}`, 'send a CiliumNetworkPolicy or an array of rules');
  }
  const o = doc as Record<string, unknown>;
  if (typeof o.kind === 'string' && o.kind.endsWith('List') && Array.isArray(o.items)) {
    o.items.forEach((item, i) => collect(item, `${pointer}/items/${i}`, out, document));
    return;
  }
  if ('kind' in o || 'apiVersion' in o) {
    check(validators().resource, o, pointer);
    const meta = o.metadata as { name: string; namespace?: string; uid?: string };
    const kind = o.kind as RuleSource['kind'];
    const resource: RuleSource = {
      kind,
      name: meta.name,
      ...(kind === 'CiliumNetworkPolicy' ? { namespace: meta.namespace ?? 'default' } : {}),
      ...(meta.uid ? { uid: meta.uid } : {}),
    };
    if (!o.spec && !o.specs) throw invalidField(`${pointer}/spec`, 'the resource has neither spec nor specs', 'add a spec with an endpointSelector');
    if (o.spec) out.push({ spec: o.spec as Record<string, unknown>, pointer: `${pointer}/spec`, document, resource });
    (o.specs as Record<string, unknown>[] | undefined)?.forEach((s, i) => out.push({ spec: s, pointer: `${pointer}/specs/${i}`, document, resource }));
    return;
  }
  check(validators().rule, o, pointer);
  out.push({ spec: o, pointer, document });
}

function check(validate: ValidateFunction, value: unknown, pointer: string): void {
  if (validate(value)) return;
  throw describe(validate.errors ?? [], pointer);
}

/** Turns the most specific ajv error into a PolicyError with a fix. */
function describe(errors: readonly ErrorObject[], prefix: string): PolicyError {
  const depth = (e: ErrorObject) => e.instancePath.split('/').length;
  const max = Math.max(...errors.map(depth));
  const deepest = errors.filter((e) => depth(e) === max);
  const e = deepest.find((x) => x.keyword === 'anyOf') ?? deepest[0]!;
  const at = prefix + e.instancePath;
  const got = JSON.stringify(e.data);
  switch (e.keyword) {
    case 'additionalProperties': {
      const field = (e.params as { additionalProperty: string }).additionalProperty;
      const allowed = Object.keys((e.parentSchema as { properties?: object }).properties ?? {}).join(', ');
      return invalidField(`${at}/${field}`, `field "${field}" is unknown or not supported`, `remove it (supported here: ${allowed})`);
    }
    case 'required': {
      const field = (e.params as { missingProperty: string }).missingProperty;
      return invalidField(`${at}/${field}`, `required field "${field}" is missing`, `add "${field}"`);
    }
    case 'enum':
      return invalidField(at, `${got} is not allowed`, `use one of ${(e.params as { allowedValues: unknown[] }).allowedValues.join(', ')}`);
    case 'const':
      return invalidField(at, `${got} is not allowed`, `use ${JSON.stringify((e.params as { allowedValue: unknown }).allowedValue)}`);
    case 'anyOf':
      return at.endsWith('/port')
        ? invalidField(at, `${got} is not a port number nor a port name`, 'give a number 0-65535 as a string or integer ("80"), or a port name of lowercase letters, digits and dashes, at most 15 ("http")')
        : invalidField(at, `${got} is not a label`, 'give "source:key=value" or {key, value, source}');
    case 'type':
      return invalidField(at, `expected ${(e.params as { type: string }).type}, got ${got}`, `give a ${(e.params as { type: string }).type}`);
    case 'minLength':
      return invalidField(at, 'must not be empty', 'give a non-empty string');
    case 'minimum':
    case 'maximum':
      return invalidField(at, `${got} is out of range`, `use a value ${e.message ?? ''}`.trim());
    default:
      return invalidField(at, e.message ?? 'is invalid', 'see docs/cells/policy.md for the supported fields');
  }
}
