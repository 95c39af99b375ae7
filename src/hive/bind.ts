/**
 * Binds a built tree into inversify containers: the root scope into the root container (the hive's
 * own, or a host tool's), every module and decorate scope that binds a token of its own (a private
 * provider, a decoration, a per-module built-in its cells inject) into a child container of its
 * enclosing scope's; a scope that binds none sees what its parent sees and shares its container. Each provider is bound, as a singleton, in the container of the scope
 * that declared it under its own service id, so inversify resolves its dependencies from there (its
 * module's private providers, the decoration around it). Its token is bound where it is visible (the
 * root for public providers, its module for private ones, the decorate scope for a decoration) to
 * `serve(record)`, which asks the declaring container. Value-group members are multi-bindings of the
 * group token at the root.
 */
import { Container } from 'inversify';
import type { BuiltTree } from './build.js';
import type { ProviderRecord, Scope } from './scope.js';
import { isGroupToken, type Token } from './token.js';

/** Gets a record's value from the container that declared it (attribution, errors). */
export type Serve = (r: ProviderRecord) => unknown;

/** Binds every scope of `tree`, the root into `rootContainer`. */
export function bindScopes(tree: BuiltTree, rootContainer: Container, serve: Serve): void {
  // the root is bound before any child container exists: a binding in a parent makes inversify
  // invalidate the plan caches of all its children, so binding top-down keeps that cost away
  bindScope(tree.root, rootContainer, serve);
  for (const members of tree.groups.values()) {
    for (const m of members) rootContainer.bind(m.token.id).toDynamicValue(() => serve(m)).inSingletonScope();
  }
  const bindChildren = (s: Scope): void => {
    for (const c of s.children) {
      // a scope that binds no token of its own sees what its parent sees: it shares its container
      bindScope(c, c.local.size > 0 ? new Container({ parent: s.container }) : s.container, serve);
      bindChildren(c);
    }
  };
  bindChildren(tree.root);
}

function bindScope(s: Scope, container: Container, serve: Serve): void {
  s.container = container;
  for (const r of s.local.values()) {
    if (r.kind === 'builtin') {
      const b = r.bind(container.bind(r.serviceId));
      if (r.transient) b.inTransientScope();
      else b.inSingletonScope();
    }
    else container.bind(r.token.id).toDynamicValue(() => serve(r)).inSingletonScope();
  }
  for (const r of s.declared) r.bind(container.bind(r.serviceId)).inSingletonScope();
}

/** The value of `token` as the cells of `container`'s scope see it (every member for a value group). */
export function getFrom(container: Container, token: Token<unknown>): unknown {
  return isGroupToken(token) ? container.getAll(token.id, { optional: true }) : container.get(token.id);
}
