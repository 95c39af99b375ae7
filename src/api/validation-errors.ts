/** Turns ajv errors into the API's ValidationError: the field as a JSON pointer and what was expected. */
import type { ErrorObject } from 'ajv/dist/2020.js';

/** One validation failure. */
export interface FieldError {
  /** JSON pointer rooted at the location: `/body/addressing/ipv4`, `/path/id`, `/query/dport`. */
  readonly field: string;
  /** For humans: `/body/addressing/ipv4 must match format "ipv4"`. */
  readonly message: string;
  /** What the spec expects there. */
  readonly expected: string;
}

/** The 400 body for a request that does not match the spec (the spec's ValidationError model). */
export interface ValidationErrorBody {
  readonly error: { readonly message: string; readonly field: string; readonly expected?: string };
}

/** Builds the ValidationError body from a field error. */
export function validationErrorBody(e: FieldError): ValidationErrorBody {
  return { error: { message: e.message, field: e.field, expected: e.expected } };
}

const escapePointer = (s: string): string => s.replace(/~/g, '~0').replace(/\//g, '~1');

/**
 * The most useful error of an ajv run, as a FieldError under `root` (`/body`, `/query`, ...).
 * `required` and `additionalProperties` point at the missing or unknown field itself. With
 * `describedPatterns` (our spec), a pattern schema's `description` says what is expected.
 */
export function toFieldError(errors: readonly ErrorObject[], root: string, describedPatterns = true): FieldError {
  const e = pickError(errors);
  let pointer = e.instancePath;
  const params = e.params as Record<string, unknown>;
  if (e.keyword === 'required') pointer += '/' + escapePointer(String(params.missingProperty));
  if (e.keyword === 'additionalProperties') pointer += '/' + escapePointer(String(params.additionalProperty));
  const field = root + pointer;
  const described = describedPatterns && e.keyword === 'pattern' && typeof (e.parentSchema as { description?: unknown } | undefined)?.description === 'string';
  const expected = described ? String((e.parentSchema as { description: string }).description) : describeExpected(e);
  const what =
    e.keyword === 'required'
      ? 'is required'
      : e.keyword === 'additionalProperties'
        ? 'is not a known field'
        : described
          ? `must be ${expected}`
          : (e.message ?? 'is invalid');
  return { field, message: `${field} ${what}`, expected };
}

/** Errors of anyOf/oneOf branches come first; the composite error says more about the field. */
function pickError(errors: readonly ErrorObject[]): ErrorObject {
  const composite = errors.find((e) => e.keyword === 'anyOf' || e.keyword === 'oneOf');
  if (composite && errors.every((e) => e.instancePath.startsWith(composite.instancePath))) return composite;
  return errors[0]!;
}

function describeExpected(e: ErrorObject): string {
  const p = e.params as Record<string, unknown>;
  const schema = (e.parentSchema ?? {}) as Record<string, unknown>;
  switch (e.keyword) {
    case 'type':
      return String(p.type);
    case 'format':
      return `string in format ${String(p.format)}`;
    case 'enum':
      return `one of ${(p.allowedValues as unknown[]).map(String).join(', ')}`;
    case 'const':
      return JSON.stringify(p.allowedValue);
    case 'pattern':
      return `a string matching ${String(p.pattern)}`;
    case 'required':
      return `a value for ${String(p.missingProperty)}`;
    case 'additionalProperties': {
      const known = Object.keys((schema.properties ?? {}) as object);
      return known.length ? `one of the fields ${known.join(', ')}` : 'no fields';
    }
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum':
    case 'minLength':
    case 'maxLength':
    case 'minItems':
    case 'maxItems':
      return (e.message ?? '').replace(/^must (be |have )?/, '');
    case 'anyOf':
    case 'oneOf': {
      const alts = (Array.isArray(schema[e.keyword]) ? schema[e.keyword] : []) as Record<string, unknown>[];
      const parts = alts.map((a) => [a.type, a.format ? `in format ${String(a.format)}` : ''].filter(Boolean).join(' '));
      return typeof schema.description === 'string' ? schema.description : parts.join(' or ') || 'one of the alternatives';
    }
    default:
      return e.message ?? e.keyword;
  }
}
