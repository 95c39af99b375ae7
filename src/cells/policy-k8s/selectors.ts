/**
 * Kubernetes label selectors as Cellium selectors: keys get the `k8s:` source (a pod selector
 * matches only labels from Kubernetes) or the namespace-label prefix Cilium gives namespace labels
 * on pod identities (`k8s:io.cilium.k8s.namespace.labels.<key>`).
 */
import { POD_NAMESPACE_KEY } from '../policy/index.js';
import type { K8sLabelSelector } from './types.js';

/** A selector in the rule format (what `endpointSelector`, `fromEndpoints` hold). */
export interface RuleSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}

/** The pod namespace label as a selector key. */
export const NAMESPACE_KEY = `k8s:${POD_NAMESPACE_KEY}`;

/** Prefix of pod selector keys. */
export const POD_PREFIX = 'k8s:';

/** Prefix of namespace selector keys (Cilium's `k8s:io.cilium.k8s.namespace.labels.`). */
export const NAMESPACE_LABELS_PREFIX = 'k8s:io.cilium.k8s.namespace.labels.';

/** A Kubernetes selector with every key prefixed. */
export function prefixed(sel: K8sLabelSelector | undefined, prefix: string): RuleSelector {
  const out: RuleSelector = {};
  const labels = Object.entries(sel?.matchLabels ?? {});
  if (labels.length) out.matchLabels = Object.fromEntries(labels.map(([k, v]) => [prefix + k, v]));
  const exprs = sel?.matchExpressions ?? [];
  if (exprs.length) out.matchExpressions = exprs.map((e) => ({ key: prefix + e.key, operator: e.operator, ...(e.values ? { values: [...e.values] } : {}) }));
  return out;
}

/** Both selectors at once (their requirements ANDed); on a matchLabels key in both, `b` wins. */
export function merged(a: RuleSelector, b: RuleSelector): RuleSelector {
  const out: RuleSelector = {};
  if (a.matchLabels || b.matchLabels) out.matchLabels = { ...a.matchLabels, ...b.matchLabels };
  const exprs = [...(a.matchExpressions ?? []), ...(b.matchExpressions ?? [])];
  if (exprs.length) out.matchExpressions = exprs;
  return out;
}

/** The pods of one namespace. */
export function inNamespace(ns: string): RuleSelector {
  return { matchLabels: { [NAMESPACE_KEY]: ns } };
}

/** Every pod, of any namespace (identities with a pod namespace label: not world, not host). */
export const ANY_POD: RuleSelector = Object.freeze({ matchExpressions: [{ key: NAMESPACE_KEY, operator: 'Exists' }] });
