/**
 * Checks of the dependency graph before anything is constructed: every dependency (transitively)
 * must be visible from where it is needed, and there must be no cycle. Inversify would fail too,
 * but only once construction is under way and without the module path and the fix.
 */
import type { ScopedInvoke } from './build.js';
import { DependencyCycleError, MissingDependencyError } from './errors.js';
import { isGroupToken } from './token.js';
import { label, type Dep, type ProviderRecord, type Scope } from './scope.js';

/** The records a dependency resolves to (every member of a value group); undefined when nothing provides it. */
function resolveDep(dep: Dep, groups: ReadonlyMap<symbol, ProviderRecord[]>): readonly ProviderRecord[] | undefined {
  if (dep.multiple) return typeof dep.token.id === 'symbol' ? (groups.get(dep.token.id) ?? []) : [];
  const r = dep.scope.lookup(dep.token);
  if (r) return [r];
  // a binding of the host container (or an ancestor of it) the cells were loaded into
  return dep.optional || dep.scope.container.isBound(dep.token.id) ? [] : undefined;
}

/** Checks the dependency trees of `roots`; throws MissingDependencyError or DependencyCycleError. */
export function checkDeps(root: Scope, groups: ReadonlyMap<symbol, ProviderRecord[]>, roots: readonly { deps: readonly Dep[]; path: string }[]): void {
  const done = new Set<ProviderRecord>();
  const onStack = new Set<ProviderRecord>();
  const stack: ProviderRecord[] = [];
  const visit = (deps: readonly Dep[], from: string): void => {
    for (const dep of deps) {
      const recs = resolveDep(dep, groups);
      if (!recs) throw new MissingDependencyError(dep.token.name, [from, ...stack.map(label)], missingHint(root, dep));
      for (const r of recs) {
        if (onStack.has(r)) throw new DependencyCycleError([...stack.slice(stack.indexOf(r)), r].map(label));
        if (done.has(r)) continue;
        stack.push(r);
        onStack.add(r);
        visit(r.deps, from);
        onStack.delete(r);
        stack.pop();
        done.add(r);
      }
    }
  };
  for (const r of roots) visit(r.deps, r.path);
}

/** Checks every invoke's dependency tree. */
export function checkGraph(root: Scope, invokes: readonly ScopedInvoke[], groups: ReadonlyMap<symbol, ProviderRecord[]>): void {
  checkDeps(root, groups, invokes.map((inv) => ({ deps: invokeDeps(inv), path: invokeLabel(inv) })));
}

/** An invoke's dependencies. */
export function invokeDeps(inv: ScopedInvoke): Dep[] {
  return inv.cell.inject.map((token) => ({ token, scope: inv.scope, multiple: isGroupToken(token), optional: false }));
}

/** `invoke "name" (module m)`. */
export function invokeLabel(inv: ScopedInvoke): string {
  return `invoke "${inv.cell.name}" (module ${inv.scope.module.id})`;
}

/** Where the missing token could come from: a private provider elsewhere, or a new provide(). */
function missingHint(root: Scope, dep: Dep): string {
  const elsewhere: string[] = [];
  for (const s of root.walk()) {
    const r = s.local.get(dep.token.id);
    if (r && !dep.scope.sees(s)) elsewhere.push(s.module.id);
  }
  const name = dep.token.name;
  if (elsewhere.length) {
    return `${name} is provided privately in module ${elsewhere.join(', ')}, which module ${dep.scope.module.id} cannot see; provide it publicly (provide instead of providePrivate) or move the dependent cell into that module`;
  }
  if (typeof dep.token.id !== 'symbol') {
    return `${name} is not a hive token: inject a token made by token() (@inject(SomeToken)), or bind ${name} in the inversify container the cells are loaded into`;
  }
  return `add a cell that provides it (provide(${name}, …)) at the top level or in module ${dep.scope.module.id}, or replace(${name}, value) in tests`;
}
