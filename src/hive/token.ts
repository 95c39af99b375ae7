/**
 * Typed dependency tokens. A cell exposes an interface and a token; other cells depend on the
 * token, never on the implementing class, so any provider can be replaced in one scope.
 */

/** A typed key under which a value is provided and injected. `T` is the injected type. */
export interface Token<T> {
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

/** Creates a token for a single value of type `T`. */
export function token<T>(name: string): Token<T> {
  return Object.freeze({ id: Symbol(name), name });
}

/** Creates a value-group token: cells contribute members with `provide(..., { into })`. */
export function groupToken<T>(name: string): GroupToken<T> {
  return Object.freeze({ id: Symbol(name), name, group: true as const });
}

/** Whether a token is a value-group token. */
export function isGroupToken(t: Token<unknown>): t is GroupToken<unknown> {
  return (t as Partial<GroupToken<unknown>>).group === true;
}

/** Maps a tuple of injected types to the tuple of tokens that inject them. */
export type Tokens<Args extends readonly unknown[]> = { readonly [K in keyof Args]: Token<Args[K]> };
