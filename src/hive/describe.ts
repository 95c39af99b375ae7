/**
 * Introspection: the modules tree with providers (private ones marked), invokes, configuration
 * with current values, and the start/stop hook order; and the same graph as Graphviz DOT.
 */
import type { Hive } from './hive.js';
import type { OwnedHook } from './lifecycle.js';
import type { ProviderRecord, Scope } from './scope.js';

const KIND_MARK: Record<string, string> = { private: ' [private]', member: ' [group member]', replace: ' [replaced]', decorate: ' [decorator]' };

/** The hive as text (`cellium-agent hive`). Populates the hive, starts nothing. */
export function describeHive(hive: Hive): string {
  hive.populate();
  const { root, records, invokes } = hive.built;
  const lines: string[] = ['Cells:'];
  const byScope = new Map<Scope, ProviderRecord[]>();
  for (const r of records) {
    const s = r.kind === 'provide' || r.kind === 'member' || r.kind === 'config' || r.kind === 'replace' ? declaringScope(r) : r.scope;
    byScope.set(s, [...(byScope.get(s) ?? []), r]);
  }
  const walk = (s: Scope, depth: number): void => {
    const pad = '  '.repeat(depth);
    if (s.isModule) lines.push(`${pad}⊛ ${s.path.at(-1) ?? s.title}${s.path.length ? ` (${s.title})` : ''}`);
    for (const r of byScope.get(s) ?? []) {
      if (r.kind === 'config') continue;
      const deps = r.deps.map((d) => d.token.name).join(', ');
      lines.push(`${pad}  • provides ${r.token.name} by ${r.name}${KIND_MARK[r.kind] ?? ''}${deps ? ` <- ${deps}` : ''}${r.constructed ? '' : ' (not constructed)'}`);
    }
    for (const i of invokes.filter((x) => x.scope === s)) lines.push(`${pad}  • invokes ${i.cell.name}(${i.cell.inject.map((t) => t.name).join(', ')})`);
    for (const c of s.children) walk(c, depth + (c.isModule ? 1 : 0));
  };
  walk(root, 0);
  lines.push('', 'Configuration:');
  for (const e of hive.config.entries()) lines.push(`  --${e.flag}=${e.field.format(e.value)} (${e.source}; ${e.owner}) ${e.field.help}`);
  lines.push('', 'Start hooks:');
  const hookLine = (h: OwnedHook, i: number): string => `  ${i + 1}. ${h.module}: ${h.cell}${h.hook.name ? ` (${h.hook.name})` : ''}`;
  lines.push(...hive.hooks().filter((h) => h.hook.onStart).map(hookLine));
  lines.push('', 'Stop hooks:');
  lines.push(...[...hive.hooks()].reverse().filter((h) => h.hook.onStop).map(hookLine));
  const jobs = hive.jobs();
  if (jobs.length) lines.push('', 'Jobs:', ...jobs.map((j) => `  ${j}`));
  return lines.join('\n') + '\n';
}

/** The provider graph in Graphviz DOT (`cellium-agent hive dot-graph`). */
export function dotGraph(hive: Hive): string {
  hive.populate();
  const { records, invokes } = hive.built;
  const id = (name: string): string => JSON.stringify(name);
  const out = ['digraph hive {', '  rankdir=LR;', '  node [shape=box, fontname="Helvetica"];'];
  for (const r of records) {
    const style = r.kind === 'private' ? ', style=dashed' : r.kind === 'config' ? ', shape=note' : '';
    out.push(`  ${id(r.token.name)} [label=${id(`${r.token.name}\\n(${r.scope.module.id})`)}${style}];`);
    for (const d of r.deps) out.push(`  ${id(r.token.name)} -> ${id(d.token.name)};`);
  }
  for (const i of invokes) {
    out.push(`  ${id(`invoke:${i.cell.name}`)} [shape=ellipse];`);
    for (const t of i.cell.inject) out.push(`  ${id(`invoke:${i.cell.name}`)} -> ${id(t.name)};`);
  }
  out.push('}');
  return out.join('\n') + '\n';
}

/** Public providers are recorded at the root; show them under the module that declared them. */
function declaringScope(r: ProviderRecord): Scope {
  return r.scope.module;
}
