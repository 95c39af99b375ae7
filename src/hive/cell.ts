/**
 * Cells: the building blocks of a hive, in cilium/hive's shape. A cell is plain data describing
 * what to provide, invoke or configure; the hive turns a tree of cells into a running application.
 */
import { InvalidDependencyError, InvalidModuleIdError } from './errors.js';
import type { Schema, ValuesOf } from './config/fields.js';
import { isToken, type GroupToken, type Token, type Tokens } from './token.js';

/** A constructor or factory producing `T` from injected `Args`. */
export type Ctor<T, Args extends readonly unknown[]> = (new (...args: Args) => T) | ((...args: Args) => T);

/** A class whose constructor inversify fills from its metadata (`@injectable()`, `@inject(Token)`). */
export type InjectableClass<T> = new (...args: never[]) => T;

/** Named dependencies, the object form: `{ cfg: ConfigToken, lc: LifecycleToken }`. */
export type DepsObject = { readonly [name: string]: Token<unknown> };

/** What an object of named tokens injects: `{ cfg: Config, lc: Lifecycle }`. */
export type DepsValues<D extends DepsObject> = { -readonly [K in keyof D]: D[K] extends Token<infer V> ? V : never };

/** A cell's dependencies: the tokens in order, and their names when written in the object form. */
export interface Injection {
  readonly inject: readonly Token<unknown>[];
  /** Names of the object form, in the order of `inject`; absent for the positional form. */
  readonly names?: readonly string[];
}

/** Provides a value for a token (or a member of a value group). */
export interface ProvideCell extends Injection {
  readonly kind: 'provide';
  readonly token: Token<unknown>;
  readonly ctor: Ctor<unknown, readonly unknown[]>;
  /** Visible only inside the declaring module and its sub-modules. */
  readonly private: boolean;
  /** A group member rather than the token's single value. */
  readonly member: boolean;
}

/** Runs a function at populate time; what it needs is constructed, and only that. */
export interface InvokeCell extends Injection {
  readonly kind: 'invoke';
  readonly name: string;
  readonly fn: (...args: readonly unknown[]) => void;
}

/** Declares a typed configuration and provides its resolved values under a token. */
export interface ConfigCell {
  readonly kind: 'config';
  readonly token: Token<unknown>;
  readonly schema: Schema;
}

/** A named scope with its own private providers, lifecycle owner name, logger and health. */
export interface ModuleCell {
  readonly kind: 'module';
  readonly id: string;
  readonly title: string;
  readonly cells: readonly Cell[];
}

/** Cells grouped together without a scope of their own. */
export interface GroupCell {
  readonly kind: 'group';
  readonly cells: readonly Cell[];
}

/** Swaps a token's value for the cells inside: they see `fn(original, ...deps)`. */
export interface DecorateCell {
  readonly kind: 'decorate';
  readonly token: Token<unknown>;
  readonly fn: (original: unknown, ...args: readonly unknown[]) => unknown;
  readonly inject: readonly Token<unknown>[];
  readonly cells: readonly Cell[];
}

/** Replaces the provider of a token everywhere in the hive (tests, embedding tools). */
export interface ReplaceCell extends Injection {
  readonly kind: 'replace';
  readonly token: Token<unknown>;
  readonly ctor: Ctor<unknown, readonly unknown[]>;
}

/** Any cell. */
export type Cell = ProvideCell | InvokeCell | ConfigCell | ModuleCell | GroupCell | DecorateCell | ReplaceCell;

const MODULE_ID = /^[a-z][a-z0-9_-]{1,30}$/;

/** A module: `id` (lowercase letter first, 2-31 chars of a-z0-9_-), a title and its cells. */
export function module(id: string, title: string, ...cells: Cell[]): ModuleCell {
  if (!MODULE_ID.test(id)) throw new InvalidModuleIdError(id);
  return { kind: 'module', id, title, cells };
}

/**
 * Provides `token` by calling `ctor` (class or factory) with its dependencies; lazy. Dependencies are
 * positional tokens (`provide(T, fn, A, B)` calls `fn(a, b)`) or one object of named tokens
 * (`provide(T, fn, { cfg: ConfigToken, lc: LifecycleToken })` calls `fn({ cfg, lc })`). A class
 * given without tokens is constructed by inversify from its own metadata (`@injectable()` with
 * `@inject(Token)` on its constructor parameters).
 */
export function provide<T, const D extends DepsObject>(token: Token<T>, ctor: Ctor<T, [DepsValues<D>]>, deps: D): ProvideCell;
export function provide<T, const Args extends readonly unknown[]>(token: Token<T>, ctor: Ctor<T, Args>, ...inject: Tokens<Args>): ProvideCell;
export function provide<T>(token: Token<T>, cls: InjectableClass<T>): ProvideCell;
export function provide(token: Token<unknown>, ctor: Ctor<unknown, never[]>, ...deps: unknown[]): ProvideCell {
  return { kind: 'provide', token, ctor: ctor as ProvideCell['ctor'], ...injection(deps), private: false, member: false };
}

/** Like provide, but visible only inside the enclosing module and its sub-modules. */
export function providePrivate<T, const D extends DepsObject>(token: Token<T>, ctor: Ctor<T, [DepsValues<D>]>, deps: D): ProvideCell;
export function providePrivate<T, const Args extends readonly unknown[]>(token: Token<T>, ctor: Ctor<T, Args>, ...inject: Tokens<Args>): ProvideCell;
export function providePrivate<T>(token: Token<T>, cls: InjectableClass<T>): ProvideCell;
export function providePrivate(token: Token<unknown>, ctor: Ctor<unknown, never[]>, ...deps: unknown[]): ProvideCell {
  return { kind: 'provide', token, ctor: ctor as ProvideCell['ctor'], ...injection(deps), private: true, member: false };
}

/** Contributes one member to a value group; injecting the group token yields every member. */
export function provideInto<T, const D extends DepsObject>(group: GroupToken<T>, ctor: Ctor<T, [DepsValues<D>]>, deps: D): ProvideCell;
export function provideInto<T, const Args extends readonly unknown[]>(group: GroupToken<T>, ctor: Ctor<T, Args>, ...inject: Tokens<Args>): ProvideCell;
export function provideInto<T>(group: GroupToken<T>, cls: InjectableClass<T>): ProvideCell;
export function provideInto(group: GroupToken<unknown>, ctor: Ctor<unknown, never[]>, ...deps: unknown[]): ProvideCell {
  return { kind: 'provide', token: group, ctor: ctor as ProvideCell['ctor'], ...injection(deps), private: false, member: true };
}

/** Calls `fn` with the values of `inject` when the hive is populated. */
export function invoke<const D extends DepsObject>(name: string, fn: (deps: DepsValues<D>) => void, deps: D): InvokeCell;
export function invoke<const Args extends readonly unknown[]>(name: string, fn: (...args: Args) => void, ...inject: Tokens<Args>): InvokeCell;
export function invoke(name: string, fn: (...args: never[]) => void, ...deps: unknown[]): InvokeCell {
  return { kind: 'invoke', name, fn: fn as InvokeCell['fn'], ...injection(deps) };
}

/** Declares configuration `schema` and provides its resolved values under `token`. */
export function config<S extends Schema>(token: Token<ValuesOf<S>>, schema: S): ConfigCell {
  return { kind: 'config', token, schema };
}

/** Groups cells without creating a scope. */
export function group(...cells: Cell[]): GroupCell {
  return { kind: 'group', cells };
}

/** The cells inside see `fn(original, ...deps)` wherever they inject `token`. */
export function decorate<T, const Args extends readonly unknown[]>(
  token: Token<T>,
  fn: (original: T, ...args: Args) => T,
  inject: Tokens<Args>,
  ...cells: Cell[]
): DecorateCell {
  return { kind: 'decorate', token, fn: fn as DecorateCell['fn'], inject: inject as readonly Token<unknown>[], cells };
}

/** Replaces whatever provides `token` with `value` for the whole hive. */
export function replace<T>(token: Token<T>, value: T): ReplaceCell {
  return { kind: 'replace', token, ctor: () => value, inject: [] };
}

/** Replaces whatever provides `token` with a constructor or factory of its own dependencies (either form). */
export function replaceWith<T, const D extends DepsObject>(token: Token<T>, ctor: Ctor<T, [DepsValues<D>]>, deps: D): ReplaceCell;
export function replaceWith<T, const Args extends readonly unknown[]>(token: Token<T>, ctor: Ctor<T, Args>, ...inject: Tokens<Args>): ReplaceCell;
export function replaceWith<T>(token: Token<T>, cls: InjectableClass<T>): ReplaceCell;
export function replaceWith(token: Token<unknown>, ctor: Ctor<unknown, never[]>, ...deps: unknown[]): ReplaceCell {
  return { kind: 'replace', token, ctor: ctor as ReplaceCell['ctor'], ...injection(deps) };
}

/** Reads a cell's dependencies: one object of named tokens, or positional tokens. */
function injection(deps: readonly unknown[]): Injection {
  const [first] = deps;
  if (deps.length === 1 && typeof first === 'object' && first !== null && !isToken(first)) {
    const entries = Object.entries(first as DepsObject);
    for (const [name, t] of entries) if (!isToken(t)) throw new InvalidDependencyError(`"${name}"`, t);
    return { inject: entries.map(([, t]) => t), names: entries.map(([n]) => n) };
  }
  for (const [i, t] of deps.entries()) if (!isToken(t)) throw new InvalidDependencyError(`#${i + 1}`, t);
  return { inject: deps as readonly Token<unknown>[] };
}

/** The arguments to call a cell's function with: the values in order, or one object of named values. */
export function callArgs(names: readonly string[] | undefined, values: readonly unknown[]): readonly unknown[] {
  if (!names) return values;
  const o: Record<string, unknown> = {};
  names.forEach((n, i) => (o[n] = values[i]));
  return [o];
}

/** Whether a function is a class (called with `new`) rather than a factory. */
export function isClass(fn: unknown): fn is new (...args: readonly unknown[]) => unknown {
  return typeof fn === 'function' && /^class[\s{]/.test(Function.prototype.toString.call(fn));
}

/** A display name for a constructor or factory. */
export function ctorName(fn: unknown, fallback = 'anonymous'): string {
  return (typeof fn === 'function' && fn.name) || fallback;
}
