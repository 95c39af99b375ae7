/**
 * Static checks of the dependency graph before anything is constructed: every dependency of every
 * invoke (transitively) must be visible from where it is needed, and there must be no cycle.
 */
import type { ScopedInvoke } from './build.js';
import { DependencyCycleError, MissingDependencyError } from './errors.js';
import { label, type Dep, type ProviderRecord, type Scope } from './scope.js';
import { isGroupToken } from './token.js';

/** Resolves a dependency to the records that satisfy it (several for a value group). */
export function resolveDep(dep: Dep, groups: ReadonlyMap<symbol, ProviderRecord[]>): ProviderRecord[] | undefined {
  if (isGroupToken(dep.token)) return groups.get(dep.token.id) ?? [];
  const r = dep.scope.lookup(dep.token);
  return r ? [r] : undefined;
}

/** Checks every invoke's dependency tree; throws MissingDependencyError or DependencyCycleError. */
export function checkGraph(root: Scope, invokes: readonly ScopedInvoke[], groups: ReadonlyMap<symbol, ProviderRecord[]>): void {
  const done = new Set<ProviderRecord>();
  const visit = (deps: readonly Dep[], path: string[], stack: ProviderRecord[]): void => {
    for (const dep of deps) {
      const recs = resolveDep(dep, groups);
      if (!recs) throw new MissingDependencyError(dep.token.name, path, missingHint(root, dep));
      for (const r of recs) {
        const at = stack.indexOf(r);
        if (at >= 0) throw new DependencyCycleError([...stack.slice(at), r].map(label));
        if (done.has(r)) continue;
        visit(r.deps, [...path, label(r)], [...stack, r]);
        done.add(r);
      }
    }
  };
  for (const inv of invokes) {
    visit(inv.cell.inject.map((token) => ({ token, scope: inv.scope })), [`invoke "${inv.cell.name}" (module ${inv.scope.module.id})`], []);
  }
}

/** Where the missing token could come from: a private provider elsewhere, or a new provide(). */
function missingHint(root: Scope, dep: Dep): string {
  const elsewhere: string[] = [];
  for (const s of root.walk()) {
    const r = s.local.get(dep.token.id);
    if (r && !dep.scope.sees(s)) elsewhere.push(s.module.id);
  }
  if (elsewhere.length) {
    return `${dep.token.name} is provided privately in module ${elsewhere.join(', ')}, which module ${dep.scope.module.id} cannot see; provide it publicly (provide instead of providePrivate) or move the dependent cell into that module`;
  }
  return `add a cell that provides it (provide(${dep.token.name}, …)) at the top level or in module ${dep.scope.module.id}, or replace(${dep.token.name}, value) in tests`;
}
