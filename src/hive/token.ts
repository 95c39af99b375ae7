/**
 * Typed dependency tokens. A cell exposes an interface and a token; other cells depend on the
 * token, never on the implementing class, so any provider can be replaced in one scope.
 *
 * A token is an inversify `LazyServiceIdentifier` that unwraps to its own symbol (`token.id`), so
 * the same object works in the hive's cells, in inversify's decorators (`@inject(IPAMToken)`,
 * `@multiInject(ApiRoutersToken)`) and, through `token.id`, in any inversify container
 * (`container.get(IPAMToken.id)`).
 */
import { LazyServiceIdentifier } from 'inversify';

/** A typed key under which a value is provided and injected. `T` is the injected type. */
export interface Token<T> extends LazyServiceIdentifier<T> {
  /** The inversify service identifier behind this token. */
  readonly id: symbol;
  /** Human name used in errors, introspection and the DOT graph. */
  readonly name: string;
  /** Phantom field carrying the injected type; never set at run time. */
  readonly __type?: T;
}

/** A token whose injected value is every value contributed to the group, in contribution order. */
export interface GroupToken<T> extends Token<readonly T[]> {
  /** Marks the token as a value group. */
  readonly group: true;
  /** Phantom field carrying the member type. */
  readonly __member?: T;
}

/** Brand of every token, shared by every copy of this module (as inversify brands its identifiers). */
const TOKEN_BRAND = Symbol.for('cellium/hive/token');

/** The one class behind every token: a lazy service identifier that unwraps to `id`. */
class HiveToken<T> extends LazyServiceIdentifier<T> implements Token<T> {
  readonly id: symbol;
  readonly [TOKEN_BRAND] = true;

  constructor(
    readonly name: string,
    readonly group?: true,
  ) {
    const id = Symbol(name);
    super(() => id);
    this.id = id;
  }
}

/** Creates a token for a single value of type `T`. */
export function token<T>(name: string): Token<T> {
  const t = new HiveToken<T>(name);
  Object.freeze(t);
  return t;
}

/** Creates a value-group token: cells contribute members with `provideInto(group, ...)`. */
export function groupToken<T>(name: string): GroupToken<T> {
  const t = new HiveToken<readonly T[]>(name, true);
  Object.freeze(t);
  return t as GroupToken<T>;
}

/** Whether a value is a hive token (made by `token()` or `groupToken()`). */
export function isToken(x: unknown): x is Token<unknown> {
  return typeof x === 'object' && x !== null && (x as { [TOKEN_BRAND]?: unknown })[TOKEN_BRAND] === true;
}

/** Whether a token is a value-group token. */
export function isGroupToken(t: Token<unknown>): t is GroupToken<unknown> {
  return (t as Partial<GroupToken<unknown>>).group === true;
}

/** Maps a tuple of injected types to the tuple of tokens that inject them. */
export type Tokens<Args extends readonly unknown[]> = { readonly [K in keyof Args]: Token<Args[K]> };
