/**
 * Scopes and provider records. Every module (and every decorate) is a scope; private providers live
 * in their module's scope, public ones in the root scope. A provider resolves its dependencies from
 * the scope it was declared in, so it sees its module's private providers and any decoration around
 * it. Scopes decide which record a token means; the hive's inversify container holds the records.
 */
import type { Token } from './token.js';

/** A dependency edge: which token, looked up from which scope. */
export interface Dep {
  readonly token: Token<unknown>;
  readonly scope: Scope;
}

/** How a record came to be. */
export type RecordKind = 'provide' | 'private' | 'member' | 'config' | 'decorate' | 'replace' | 'builtin';

/** Something that can construct the value of a token. */
export interface ProviderRecord {
  readonly kind: RecordKind;
  readonly token: Token<unknown>;
  /** The cell's display name (class or factory name, or the token for config). */
  readonly name: string;
  /** The scope it was declared in (what its dependencies resolve from). */
  readonly scope: Scope;
  /** Its dependencies. */
  readonly deps: readonly Dep[];
  /** Builds the value from the resolved dependencies, in order. */
  readonly build: (args: readonly unknown[]) => unknown;
  /** Set once constructed. */
  constructed: boolean;
  /** The record's own service identifier in the hive's inversify container, once bound. */
  serviceId?: symbol;
  value?: unknown;
}

/** A module scope. */
export class Scope {
  /** Records declared locally (private providers, decorations, per-module built-ins). */
  readonly local = new Map<symbol, ProviderRecord>();
  /** Child scopes, for introspection. */
  readonly children: Scope[] = [];

  constructor(
    /** Module ids from the root down ([] for the root). */
    readonly path: readonly string[],
    readonly title: string,
    readonly parent?: Scope,
    /** Whether this scope is a module (false for a decorate scope). */
    readonly isModule = true,
  ) {
    parent?.children.push(this);
  }

  /** "a/b/c", or the root's name. */
  get id(): string {
    return this.path.length ? this.path.join('/') : 'root';
  }

  /** The nearest enclosing module scope (itself for a module). */
  get module(): Scope {
    return this.isModule || !this.parent ? this : this.parent.module;
  }

  /** Finds the record visible from this scope for `token`, walking up to the root. */
  lookup(token: Token<unknown>): ProviderRecord | undefined {
    return this.local.get(token.id) ?? this.parent?.lookup(token);
  }

  /** Whether `other` is this scope or one of its ancestors. */
  sees(other: Scope): boolean {
    return this === other || (this.parent?.sees(other) ?? false);
  }

  /** Every scope in this subtree, this one first. */
  *walk(): Generator<Scope> {
    yield this;
    for (const c of this.children) yield* c.walk();
  }
}

/** "Name (module m)" for messages. */
export function label(r: ProviderRecord): string {
  const where = r.scope.module.id;
  return r.name === r.token.name ? `${r.name} (module ${where})` : `${r.name}<${r.token.name}> (module ${where})`;
}
