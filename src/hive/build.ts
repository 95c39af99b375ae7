/**
 * Turns a tree of cells into scopes and provider records (nothing is bound or constructed here):
 * public providers become visible at the root, private ones in their module, decorations in the
 * decorate's own scope; replacements win over every other provider of their token.
 */
import type { ServiceIdentifier } from 'inversify';
import type { Cell, ConfigCell, DecorateCell, InvokeCell, ProvideCell, ReplaceCell } from './cell.js';
import { ConfigRegistry, flagName } from './config/index.js';
import { DuplicateProviderError, GroupTokenError } from './errors.js';
import { providerSpec, resolvedSpec, type ProviderSpec } from './provider.js';
import { Scope, label, type ProviderRecord, type RecordKind } from './scope.js';
import { isGroupToken, type Token } from './token.js';

/** An invoke with the scope it was declared in. */
export interface ScopedInvoke {
  readonly cell: InvokeCell;
  readonly scope: Scope;
}

/** What building a cell tree produces. */
export interface BuiltTree {
  readonly root: Scope;
  readonly invokes: readonly ScopedInvoke[];
  /** Members of each value group, in contribution order. */
  readonly groups: ReadonlyMap<symbol, ProviderRecord[]>;
  /** Every record, in declaration order (for introspection). */
  readonly records: readonly ProviderRecord[];
}

/** Per-scope built-ins (Lifecycle, Logger, Health, Jobs) are added by the hive through this hook. */
export type ScopeInit = (scope: Scope, builtin: <T>(token: Token<T>, make: () => T, transient?: boolean) => void) => void;

/** What a host inversify container (cells loaded into another tool's container) already binds. */
export type HostBinds = (id: ServiceIdentifier) => boolean;

/** Where a host container's own binding is named in errors. */
export const HOST = 'the host inversify container';

/** Builds scopes and records from cells; declares config flags into `registry`. */
export function buildTree(name: string, cells: readonly Cell[], registry: ConfigRegistry, initScope: ScopeInit, hostBinds: HostBinds = () => false): BuiltTree {
  const root = new Scope([], name);
  const invokes: ScopedInvoke[] = [];
  const groups = new Map<symbol, ProviderRecord[]>();
  const records: ProviderRecord[] = [];
  const replacements = new Map<symbol, ReplaceCell>();
  collectReplacements(cells, replacements);

  // a record's dependencies resolve from the scope that declared it
  const newRecord = (kind: RecordKind, token: Token<unknown>, scope: Scope, visibleIn: Scope, spec: ProviderSpec): ProviderRecord => ({
    kind, token, name: spec.name, scope, visibleIn,
    deps: spec.deps.map((d) => ({ token: d.key, scope, multiple: d.multiple, optional: d.optional })),
    serviceId: Symbol(spec.name), bind: spec.bind, constructed: false,
  });
  const add = (r: ProviderRecord): void => {
    const prev = r.visibleIn.local.get(r.token.id);
    if (prev) throw new DuplicateProviderError(r.token.name, label(prev), label(r));
    if (r.visibleIn === root && hostBinds(r.token.id)) throw new DuplicateProviderError(r.token.name, HOST, label(r));
    r.visibleIn.local.set(r.token.id, r);
    r.scope.declared.push(r);
    records.push(r);
  };
  const where = (scope: Scope) => (n: string) => `${n} (module ${scope.module.id})`;

  const initBuiltins = (scope: Scope): void =>
    initScope(scope, (token, make, transient) => {
      // a replace() or a binding of the host container wins over the per-module built-ins
      if (replacements.has(token.id) || hostBinds(token.id)) return;
      scope.local.set(token.id, {
        kind: 'builtin', token, name: token.name, scope, visibleIn: scope, deps: [], serviceId: token.id, bind: (to) => to.toDynamicValue(make), transient, constructed: false,
      });
    });
  initBuiltins(root);

  const onProvide = (c: ProvideCell, scope: Scope): void => {
    if (!c.member && isGroupToken(c.token)) throw new GroupTokenError(c.private ? 'providePrivate' : 'provide', c.token.name, `module ${scope.module.id}`);
    if (replacements.has(c.token.id) && !c.member) return; // the replacement provides it (declared at the root below)
    const spec = providerSpec(c.ctor, c, c.token.name, where(scope));
    if (c.member) {
      const r = newRecord('member', c.token, scope, root, spec);
      scope.declared.push(r);
      records.push(r);
      groups.set(c.token.id, [...(groups.get(c.token.id) ?? []), r]);
      return;
    }
    add(newRecord(c.private ? 'private' : 'provide', c.token, scope, c.private ? scope : root, spec));
  };

  const onConfig = (c: ConfigCell, scope: Scope): void => {
    const keys = Object.keys(c.schema);
    for (const k of keys) registry.declare(flagName(k), c.schema[k]!, `${c.token.name} (module ${scope.module.id})`);
    if (replacements.has(c.token.id)) return; // the flags stay declared; the replacement provides the values
    const values = (): unknown => Object.freeze(Object.fromEntries(keys.map((k) => [k, registry.value(flagName(k))])));
    add(newRecord('config', c.token, scope, root, { name: c.token.name, deps: [], bind: (to) => to.toDynamicValue(values) }));
  };

  // the decoration is bound in the enclosing scope (it decorates what that scope sees) and its token
  // is rebound in a child scope holding the decorated cells
  const onDecorate = (c: DecorateCell, scope: Scope): Scope => {
    if (isGroupToken(c.token)) throw new GroupTokenError('decorate', c.token.name, `module ${scope.module.id}`);
    const inner = new Scope(scope.path, `decorate ${c.token.name}`, scope, false);
    const spec = resolvedSpec(`decorate(${c.fn.name || 'anonymous'})`, [c.token, ...c.inject], (args) => c.fn(args[0], ...args.slice(1)));
    add(newRecord('decorate', c.token, scope, inner, spec));
    return inner;
  };

  const walk = (cs: readonly Cell[], scope: Scope): void => {
    for (const c of cs) {
      switch (c.kind) {
        case 'module': {
          const s = new Scope([...scope.path, c.id], c.title, scope);
          initBuiltins(s);
          walk(c.cells, s);
          break;
        }
        case 'group':
          walk(c.cells, scope);
          break;
        case 'provide':
          onProvide(c, scope);
          break;
        case 'invoke':
          invokes.push({ cell: c, scope });
          break;
        case 'config':
          onConfig(c, scope);
          break;
        case 'decorate':
          walk(c.cells, onDecorate(c, scope));
          break;
        case 'replace':
          break;
      }
    }
  };
  walk(cells, root);
  for (const rep of replacements.values()) {
    if (isGroupToken(rep.token)) throw new GroupTokenError('replace', rep.token.name, 'the hive');
    add(newRecord('replace', rep.token, root, root, providerSpec(rep.ctor, rep, 'replace', (n) => `replace(${n})`)));
  }
  pruneUnusedBuiltins(root, records, invokes);
  return { root, invokes, groups, records };
}

/** Drops the per-module built-ins nothing in their module injects, so their containers stay small. */
function pruneUnusedBuiltins(root: Scope, records: readonly ProviderRecord[], invokes: readonly ScopedInvoke[]): void {
  const used = new Set<ProviderRecord>();
  const mark = (scope: Scope, id: ServiceIdentifier, name: string): void => {
    const r = scope.lookup({ id, name });
    if (r?.kind === 'builtin') used.add(r);
  };
  for (const r of records) for (const d of r.deps) mark(d.scope, d.token.id, d.token.name);
  for (const i of invokes) for (const t of i.cell.inject) mark(i.scope, t.id, t.name);
  for (const s of root.walk()) {
    if (s === root) continue; // the root's built-ins stay: hive.get() and a host container may ask for them
    for (const [id, r] of s.local) if (r.kind === 'builtin' && !used.has(r)) s.local.delete(id);
  }
}

function collectReplacements(cells: readonly Cell[], out: Map<symbol, ReplaceCell>): void {
  for (const c of cells) {
    if (c.kind === 'replace') out.set(c.token.id, c);
    else if (c.kind === 'module' || c.kind === 'group' || c.kind === 'decorate') collectReplacements(c.cells, out);
  }
}
