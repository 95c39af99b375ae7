/**
 * Turns a tree of cells into scopes and provider records (no construction happens here).
 */
import { ctorName, isClass, type Cell, type ConfigCell, type Ctor, type DecorateCell, type InvokeCell, type ProvideCell, type ReplaceCell } from './cell.js';
import { ConfigRegistry, flagName } from './config/index.js';
import { DuplicateProviderError } from './errors.js';
import { Scope, label, type ProviderRecord, type RecordKind } from './scope.js';
import type { Token } from './token.js';

/** An invoke with the scope it was declared in. */
export interface ScopedInvoke {
  readonly cell: InvokeCell;
  readonly scope: Scope;
}

/** What building a cell tree produces. */
export interface BuiltTree {
  readonly root: Scope;
  readonly invokes: readonly ScopedInvoke[];
  readonly groups: ReadonlyMap<symbol, ProviderRecord[]>;
  /** Every record, in declaration order (for introspection). */
  readonly records: readonly ProviderRecord[];
}

/** Per-scope built-ins (Lifecycle, Logger, Health, Jobs) are added by the hive through this hook. */
export type ScopeInit = (scope: Scope) => void;

/** Builds scopes and records from cells; declares config flags into `registry`. */
export function buildTree(name: string, cells: readonly Cell[], registry: ConfigRegistry, initScope: ScopeInit): BuiltTree {
  const root = new Scope([], name);
  initScope(root);
  const invokes: ScopedInvoke[] = [];
  const groups = new Map<symbol, ProviderRecord[]>();
  const records: ProviderRecord[] = [];
  const replacements = new Map<symbol, ReplaceCell>();
  collectReplacements(cells, replacements);

  const addRecord = (target: Scope, r: ProviderRecord): void => {
    const prev = target.local.get(r.token.id);
    if (prev) throw new DuplicateProviderError(r.token.name, label(prev), label(r));
    target.local.set(r.token.id, r);
    records.push(r);
  };

  const ctorBuild = (ctor: Ctor<unknown, readonly unknown[]>) =>
    isClass(ctor) ? (args: readonly unknown[]) => new ctor(...args) : (args: readonly unknown[]) => (ctor as (...a: readonly unknown[]) => unknown)(...args);

  const record = (kind: RecordKind, token: Token<unknown>, name: string, scope: Scope, inject: readonly Token<unknown>[], build: (a: readonly unknown[]) => unknown): ProviderRecord => ({
    kind, token, name, scope, deps: inject.map((t) => ({ token: t, scope })), build, constructed: false,
  });

  const onProvide = (c: ProvideCell, scope: Scope): void => {
    const rep = replacements.get(c.token.id);
    if (rep && !c.member) return; // the replacement provides it (declared at the root below)
    const kind: RecordKind = c.member ? 'member' : c.private ? 'private' : 'provide';
    const r = record(kind, c.token, ctorName(c.ctor, c.token.name), scope, c.inject, ctorBuild(c.ctor));
    if (c.member) {
      const list = groups.get(c.token.id) ?? [];
      list.push(r);
      groups.set(c.token.id, list);
      records.push(r);
      return;
    }
    addRecord(c.private ? scope : root, r);
  };

  const onConfig = (c: ConfigCell, scope: Scope): void => {
    const keys = Object.keys(c.schema);
    for (const k of keys) registry.declare(flagName(k), c.schema[k]!, `${c.token.name} (module ${scope.module.id})`);
    const build = (): unknown => Object.freeze(Object.fromEntries(keys.map((k) => [k, registry.value(flagName(k))])));
    addRecord(root, record('config', c.token, c.token.name, scope, [], build));
  };

  const onDecorate = (c: DecorateCell, scope: Scope): Scope => {
    const inner = new Scope(scope.path, `decorate ${c.token.name}`, scope, false);
    const r: ProviderRecord = {
      kind: 'decorate', token: c.token, name: `decorate(${ctorName(c.fn)})`, scope: inner,
      deps: [{ token: c.token, scope }, ...c.inject.map((t) => ({ token: t, scope }))],
      build: (args) => c.fn(args[0], ...args.slice(1)), constructed: false,
    };
    addRecord(inner, r);
    return inner;
  };

  const walk = (cs: readonly Cell[], scope: Scope): void => {
    for (const c of cs) {
      switch (c.kind) {
        case 'module': {
          const s = new Scope([...scope.path, c.id], c.title, scope);
          initScope(s);
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
    // a replacement wins everywhere, including over the per-module built-ins (Jobs, Health, …)
    for (const sc of root.walk()) if (sc.local.get(rep.token.id)?.kind === 'builtin') sc.local.delete(rep.token.id);
    root.local.delete(rep.token.id);
    addRecord(root, record('replace', rep.token, `replace(${ctorName(rep.ctor)})`, root, rep.inject, ctorBuild(rep.ctor)));
  }
  return { root, invokes, groups, records };
}

function collectReplacements(cells: readonly Cell[], out: Map<symbol, ReplaceCell>): void {
  for (const c of cells) {
    if (c.kind === 'replace') out.set(c.token.id, c);
    else if (c.kind === 'module' || c.kind === 'group' || c.kind === 'decorate') collectReplacements(c.cells, out);
  }
}
