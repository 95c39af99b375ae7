/**
 * Cells: the building blocks of a hive, in cilium/hive's shape. A cell is plain data describing
 * what to provide, invoke or configure; the hive turns a tree of cells into a running application.
 */
import { InvalidModuleIdError } from './errors.js';
import type { Schema, ValuesOf } from './config/fields.js';
import type { GroupToken, Token, Tokens } from './token.js';

/** A constructor or factory producing `T` from injected `Args`. */
export type Ctor<T, Args extends readonly unknown[]> = (new (...args: Args) => T) | ((...args: Args) => T);

/** Provides a value for a token (or a member of a value group). */
export interface ProvideCell {
  readonly kind: 'provide';
  readonly token: Token<unknown>;
  readonly ctor: Ctor<unknown, readonly unknown[]>;
  readonly inject: readonly Token<unknown>[];
  /** Visible only inside the declaring module and its sub-modules. */
  readonly private: boolean;
  /** A group member rather than the token's single value. */
  readonly member: boolean;
}

/** Runs a function at populate time; what it needs is constructed, and only that. */
export interface InvokeCell {
  readonly kind: 'invoke';
  readonly name: string;
  readonly fn: (...args: readonly unknown[]) => void;
  readonly inject: readonly Token<unknown>[];
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
export interface ReplaceCell {
  readonly kind: 'replace';
  readonly token: Token<unknown>;
  readonly ctor: Ctor<unknown, readonly unknown[]>;
  readonly inject: readonly Token<unknown>[];
}

/** Any cell. */
export type Cell = ProvideCell | InvokeCell | ConfigCell | ModuleCell | GroupCell | DecorateCell | ReplaceCell;

const MODULE_ID = /^[a-z][a-z0-9_-]{1,30}$/;

/** A module: `id` (lowercase letter first, 2-31 chars of a-z0-9_-), a title and its cells. */
export function module(id: string, title: string, ...cells: Cell[]): ModuleCell {
  if (!MODULE_ID.test(id)) throw new InvalidModuleIdError(id);
  return { kind: 'module', id, title, cells };
}

/** Provides `token` by calling `ctor` (class or factory) with the values of `inject`; lazy. */
export function provide<T, const Args extends readonly unknown[]>(token: Token<T>, ctor: Ctor<T, Args>, ...inject: Tokens<Args>): ProvideCell {
  return { kind: 'provide', token, ctor: ctor as Ctor<unknown, readonly unknown[]>, inject: inject as readonly Token<unknown>[], private: false, member: false };
}

/** Like provide, but visible only inside the enclosing module and its sub-modules. */
export function providePrivate<T, const Args extends readonly unknown[]>(token: Token<T>, ctor: Ctor<T, Args>, ...inject: Tokens<Args>): ProvideCell {
  return { ...provide(token, ctor, ...inject), private: true };
}

/** Contributes one member to a value group; injecting the group token yields every member. */
export function provideInto<T, const Args extends readonly unknown[]>(group: GroupToken<T>, ctor: Ctor<T, Args>, ...inject: Tokens<Args>): ProvideCell {
  return { kind: 'provide', token: group, ctor: ctor as Ctor<unknown, readonly unknown[]>, inject: inject as readonly Token<unknown>[], private: false, member: true };
}

/** Calls `fn` with the values of `inject` when the hive is populated. */
export function invoke<const Args extends readonly unknown[]>(name: string, fn: (...args: Args) => void, ...inject: Tokens<Args>): InvokeCell {
  return { kind: 'invoke', name, fn: fn as (...args: readonly unknown[]) => void, inject: inject as readonly Token<unknown>[] };
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

/** Replaces whatever provides `token` with a constructor or factory of its own dependencies. */
export function replaceWith<T, const Args extends readonly unknown[]>(token: Token<T>, ctor: Ctor<T, Args>, ...inject: Tokens<Args>): ReplaceCell {
  return { kind: 'replace', token, ctor: ctor as Ctor<unknown, readonly unknown[]>, inject: inject as readonly Token<unknown>[] };
}

/** Whether a function is a class (called with `new`) rather than a factory. */
export function isClass(fn: unknown): fn is new (...args: readonly unknown[]) => unknown {
  return typeof fn === 'function' && /^class[\s{]/.test(Function.prototype.toString.call(fn));
}

/** A display name for a constructor or factory. */
export function ctorName(fn: unknown, fallback = 'anonymous'): string {
  return (typeof fn === 'function' && fn.name) || fallback;
}
