/**
 * Scopes and provider records: what the hive knows about its cells, for the graph checks, the
 * errors and introspection. Every module (and every decorate) is a scope and, once bound, an
 * inversify container whose parent is the enclosing scope's container; inversify does all the
 * resolving and keeps the singletons. A record says which token a cell provides, where it is
 * visible (the root for public providers, the module for private ones) and where its dependencies
 * resolve from (the scope that declared it).
 */
import type { BindInFluentSyntax, BindToFluentSyntax, Container, ServiceIdentifier } from 'inversify';
import type { Token } from './token.js';

/** What a dependency names: a hive token, or a service identifier met in a class's inversify metadata. */
export interface Key {
  readonly id: ServiceIdentifier;
  readonly name: string;
  /** A value group (only hive group tokens). */
  readonly group?: true;
}

/** A dependency edge: which key, looked up from which scope. */
export interface Dep {
  readonly token: Key;
  readonly scope: Scope;
  /** Multi-injection: every member of a value group. */
  readonly multiple: boolean;
  /** Marked `@optional()` in a class's metadata: absent is fine. */
  readonly optional: boolean;
}

/** How a record came to be. */
export type RecordKind = 'provide' | 'private' | 'member' | 'config' | 'decorate' | 'replace' | 'builtin';

/** Something that can construct the value of a token. */
export interface ProviderRecord {
  readonly kind: RecordKind;
  readonly token: Token<unknown>;
  /** The cell's display name (class or factory name, or the token for config). */
  readonly name: string;
  /** The scope that declared it: its dependencies resolve from this scope's container, where it is bound. */
  readonly scope: Scope;
  /** The scope whose container binds `token` to it (the root for public providers). */
  readonly visibleIn: Scope;
  /** Its dependencies. */
  readonly deps: readonly Dep[];
  /** Its own service identifier in `scope`'s container (the token's id for built-ins). */
  readonly serviceId: ServiceIdentifier;
  /** Binds the provider's construction under `serviceId` (inversify resolves its dependencies). */
  readonly bind: (to: BindToFluentSyntax<unknown>) => BindInFluentSyntax<unknown>;
  /** A built-in made anew for each provider that injects it (the Lifecycle), instead of a singleton. */
  readonly transient?: boolean;
  /** Set once constructed (introspection). */
  constructed: boolean;
}

/** A module scope (or the scope of a decorate). */
export class Scope {
  /** Records whose token this scope's container binds (private providers, decorations, built-ins; public ones at the root). */
  readonly local = new Map<ServiceIdentifier, ProviderRecord>();
  /** Records declared here (bound in this scope's container under their own service id). */
  readonly declared: ProviderRecord[] = [];
  /** Child scopes. */
  readonly children: Scope[] = [];
  /** The inversify container of this scope (its parent's when it binds nothing of its own); set by bindScopes. */
  container!: Container;

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

  /** "a/b/c", or "root". */
  get id(): string {
    return this.path.length ? this.path.join('/') : 'root';
  }

  /** The nearest enclosing module scope (itself for a module). */
  get module(): Scope {
    return this.isModule || !this.parent ? this : this.parent.module;
  }

  /** The record the cells of this scope get for `key`: the nearest scope, walking up, that binds it. */
  lookup(key: Key): ProviderRecord | undefined {
    return this.local.get(key.id) ?? this.parent?.lookup(key);
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
