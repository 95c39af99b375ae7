/**
 * Typed configuration fields. A cell declares its configuration as an object of fields with
 * defaults; each key becomes a flag (`--endpoint-gc-interval`), an environment variable
 * (`CELLIUM_ENDPOINT_GC_INTERVAL`) and a config-file key.
 */
import { parseDuration, formatDuration } from './duration.js';

/** The kinds of value a field can hold. */
export type FieldKind = 'duration' | 'int' | 'number' | 'string' | 'bool' | 'list' | 'enum';

/** One typed configuration field. `parse` throws a plain Error describing what was expected. */
export interface Field<T> {
  readonly kind: FieldKind;
  readonly default: T;
  readonly help: string;
  /** Allowed values for enum fields. */
  readonly values?: readonly string[];
  /** Converts a raw value (flag/env string, or a config-file value) to the typed value. */
  parse(raw: unknown): T;
  /** Renders a value for introspection and help. */
  format(value: T): string;
}

/** A config schema: field per key. */
export type Schema = Record<string, Field<unknown>>;

/** The typed values of a schema. */
export type ValuesOf<S extends Schema> = { readonly [K in keyof S]: S[K] extends Field<infer T> ? T : never };

function field<T>(kind: FieldKind, def: T, help: string, parse: (raw: unknown) => T, format: (v: T) => string = String, values?: readonly string[]): Field<T> {
  return Object.freeze({ kind, default: def, help, parse, format, values });
}

/** A duration in milliseconds; accepts `5m`, `30s`, `1h30m`, `250ms` or a number of milliseconds. */
export function duration(def: string, help: string): Field<number> {
  return field('duration', parseDuration(def), help, (raw) => parseDuration(raw), formatDuration);
}

/** An integer, optionally bounded. */
export function int(def: number, help: string, bounds: { min?: number; max?: number } = {}): Field<number> {
  return field('int', def, help, (raw) => {
    const n = typeof raw === 'number' ? raw : typeof raw === 'string' && /^-?\d+$/.test(raw.trim()) ? Number(raw) : NaN;
    if (!Number.isSafeInteger(n)) throw new Error(`expected an integer, got ${JSON.stringify(raw)}`);
    if (bounds.min !== undefined && n < bounds.min) throw new Error(`expected an integer >= ${bounds.min}, got ${n}`);
    if (bounds.max !== undefined && n > bounds.max) throw new Error(`expected an integer <= ${bounds.max}, got ${n}`);
    return n;
  });
}

/** A string. */
export function string(def: string, help: string): Field<string> {
  return field('string', def, help, (raw) => {
    if (typeof raw === 'string') return raw;
    if (typeof raw === 'number') return String(raw);
    throw new Error(`expected a string, got ${JSON.stringify(raw)}`);
  }, (v) => JSON.stringify(v));
}

/** A boolean; accepts true/false, 1/0, yes/no. */
export function bool(def: boolean, help: string): Field<boolean> {
  return field('bool', def, help, (raw) => {
    if (typeof raw === 'boolean') return raw;
    const s = String(raw).trim().toLowerCase();
    if (['true', '1', 'yes', 'on'].includes(s)) return true;
    if (['false', '0', 'no', 'off'].includes(s)) return false;
    throw new Error(`expected a boolean (true or false), got ${JSON.stringify(raw)}`);
  });
}

/** A list of strings; from a flag or env var as a comma-separated string, from a file as an array. */
export function list(def: readonly string[], help: string): Field<readonly string[]> {
  return field('list', def, help, (raw) => {
    if (Array.isArray(raw) && raw.every((x) => typeof x === 'string')) return raw as string[];
    if (typeof raw === 'string') return raw.split(',').map((s) => s.trim()).filter(Boolean);
    throw new Error(`expected a list of strings (comma-separated), got ${JSON.stringify(raw)}`);
  }, (v) => v.join(','));
}

/** One of a fixed set of strings. */
export function oneOf<const V extends string>(values: readonly V[], def: V, help: string): Field<V> {
  return field('enum', def, help, (raw) => {
    if (typeof raw === 'string' && (values as readonly string[]).includes(raw)) return raw as V;
    throw new Error(`expected one of ${values.join(', ')}, got ${JSON.stringify(raw)}`);
  }, String, values);
}

/** The flag name of a config key: `endpointGCInterval` -> `endpoint-gc-interval`. */
export function flagName(key: string): string {
  return key
    .replace(/([a-z0-9])([A-Z])/g, '$1-$2')
    .replace(/([A-Z])([A-Z][a-z])/g, '$1-$2')
    .toLowerCase();
}

/** The environment variable of a flag: `endpoint-gc-interval` -> `CELLIUM_ENDPOINT_GC_INTERVAL`. */
export function envName(flag: string, prefix = 'CELLIUM_'): string {
  return prefix + flag.replace(/-/g, '_').toUpperCase();
}
