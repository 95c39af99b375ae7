/**
 * Labels in Cilium's form `source:key=value` (e.g. `k8s:app=server`, `reserved:host`). A label
 * without a source gets `unspec`. Label sets are kept sorted so equal sets compare equal.
 */

/** One label. */
export interface Label {
  readonly source: string;
  readonly key: string;
  readonly value: string;
}

/** Sources Cilium uses; `any` in a selector matches every source. */
export const LabelSource = { any: 'any', k8s: 'k8s', container: 'container', reserved: 'reserved', cidr: 'cidr', unspec: 'unspec' } as const;

const LABEL_RE = /^(?:([A-Za-z0-9_.-]+):)?([A-Za-z0-9_./-]+)(?:=(.*))?$/;

/** Parses `source:key=value`, `key=value` or `key`; throws with the label on bad syntax. */
export function parseLabel(raw: string): Label {
  const s = raw.trim();
  // keys may contain ':' after the source (k8s:io.kubernetes.pod.namespace); split at the first ':' only
  const m = LABEL_RE.exec(s);
  if (!m || !m[2]) throw new Error(`invalid label "${raw}": expected source:key=value, key=value or key (e.g. k8s:app=server)`);
  return { source: m[1] ?? LabelSource.unspec, key: m[2], value: m[3] ?? '' };
}

/** Renders a label as `source:key=value` (or `source:key` without a value). */
export function formatLabel(l: Label): string {
  return `${l.source}:${l.key}${l.value !== '' ? `=${l.value}` : ''}`;
}

/** Parses, de-duplicates (last wins per source:key) and sorts a list of labels. */
export function parseLabels(raws: readonly string[]): Label[] {
  const byKey = new Map<string, Label>();
  for (const r of raws) {
    const l = parseLabel(r);
    byKey.set(`${l.source}:${l.key}`, l);
  }
  return sortLabels([...byKey.values()]);
}

/** Sorts labels by their `source:key=value` text (code-point order, so the order is the same everywhere). */
export function sortLabels(ls: readonly Label[]): Label[] {
  return ls
    .map((l) => [formatLabel(l), l] as const)
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .map(([, l]) => l);
}

/** The canonical string of a sorted label set (identity key). */
export function labelsKey(ls: readonly Label[]): string {
  return formatLabels(ls).join(';');
}

/** Labels as sorted strings. */
export function formatLabels(ls: readonly Label[]): string[] {
  return ls.map(formatLabel).sort();
}

/**
 * Whether a selector key (`app`, `k8s:app`, `any:app`, `k8s.app` as Cilium writes selectors)
 * matches a label of the set; returns the label's value when it does.
 */
export function lookupSelectorKey(ls: readonly Label[], selectorKey: string): string | undefined {
  const { source, key } = splitSelectorKey(selectorKey);
  const hit = ls.find((l) => l.key === key && (source === LabelSource.any || l.source === source));
  return hit?.value;
}

/** Splits `k8s:app`, `k8s.app` (only for known sources), `any:app` or `app` into source and key. */
export function splitSelectorKey(selectorKey: string): { source: string; key: string } {
  const colon = selectorKey.indexOf(':');
  if (colon > 0) return { source: selectorKey.slice(0, colon), key: selectorKey.slice(colon + 1) };
  const dot = selectorKey.indexOf('.');
  if (dot > 0) {
    const src = selectorKey.slice(0, dot);
    if (src === 'k8s' || src === 'any' || src === 'reserved' || src === 'container') return { source: src, key: selectorKey.slice(dot + 1) };
  }
  return { source: LabelSource.any, key: selectorKey };
}
