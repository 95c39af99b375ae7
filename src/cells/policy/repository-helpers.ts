/** Small helpers of the repository: set-valued indexes, label filters, trace subjects. */
import type { Identity } from '../identity/types.js';
import { makeIdentity } from '../identity/index.js';
import { parseLabel, parseLabels, type Label } from '../../lib/labels.js';
import { invalidField, unknownIdentity } from './errors.js';
import type { CompiledRule } from './rule.js';
import type { TraceSubject } from './types.js';

export { addTo, removeFrom } from '../../lib/multi-index.js';

/** A rule's labels parsed, once per rule (rules are immutable; a filter is matched against every rule). */
const parsed = new WeakMap<CompiledRule, readonly Label[]>();

/** Whether a rule's labels include every label of the filter (a filter label without source matches any source). */
export function hasLabels(rule: CompiledRule, filter: readonly Label[]): boolean {
  let mine = parsed.get(rule);
  if (!mine) parsed.set(rule, (mine = rule.labels.map(parseLabel)));
  return filter.every((f) => mine!.some((l) => l.key === f.key && l.value === f.value && (f.source === 'unspec' || l.source === f.source)));
}

/** The identity a trace subject stands for: a known number, or a label set (allocated or not). */
export function subjectIdentity(s: TraceSubject, which: 'src' | 'dst', byId: (id: number) => Identity | undefined, byLabels: (ls: Label[]) => Identity | undefined): Identity {
  if ('identity' in s) {
    const found = byId(s.identity);
    if (!found) throw unknownIdentity(`/${which}/identity`, s.identity);
    return found;
  }
  let ls: Label[];
  try {
    ls = parseLabels(s.labels);
  } catch (err) {
    throw invalidField(`/${which}/labels`, (err as Error).message, 'give labels as source:key=value (e.g. k8s:app=web)');
  }
  return byLabels(ls) ?? makeIdentity(-1, ls, false);
}