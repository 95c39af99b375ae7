/**
 * Selectors of the policy language, compiled: label selectors (matchLabels, matchExpressions with
 * In, NotIn, Exists, DoesNotExist), entities, CIDRs and the wildcard. Each has a canonical key
 * (equal selectors share a SelectorCache entry) and a match function over an identity's labels.
 */
import { cidrContains, cidrContainsAddr, formatCidr, parseAddr, parseCidr, type Cidr } from '../../lib/addr.js';
import { cidrOfLabel } from '../identity/index.js';
import type { Identity } from '../identity/types.js';
import { splitSelectorKey, type Label } from '../../lib/labels.js';
import { isWorldIdentity } from './world.js';

/** Label selector operators. */
export type Operator = 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';

/** One requirement of a label selector. */
export interface Requirement {
  readonly source: string;
  readonly key: string;
  readonly op: Operator;
  readonly values: readonly string[];
}

/** A compiled selector. */
export interface Selector {
  readonly kind: 'labels' | 'entity' | 'cidr' | 'wildcard';
  /** Canonical text, e.g. `any:app=web,k8s:io.kubernetes.pod.namespace=prod`, `entity:world`, `cidr:10.0.0.0/8`, `*`. */
  readonly key: string;
  /**
   * Whether the selector selects `identity`. A selector `byAddress` (a Kubernetes ipBlock) also
   * looks at `addresses`, every current address of the identity's endpoints (undefined: unknown).
   */
  matches(identity: Identity, addresses?: readonly string[]): boolean;
  /** Whether the selection depends on the endpoints' addresses too (the SelectorCache re-matches it when they change). */
  readonly byAddress?: boolean;
}

/** The selector of every identity (policy key identity 0). */
export const WILDCARD: Selector = Object.freeze({ kind: 'wildcard', key: '*', matches: () => true });

function reqText(r: Requirement): string {
  const k = `${r.source}:${r.key}`;
  switch (r.op) {
    case 'In':
      return r.values.length === 1 ? `${k}=${r.values[0]}` : `${k} in (${r.values.join(',')})`;
    case 'NotIn':
      return `${k} notin (${r.values.join(',')})`;
    case 'Exists':
      return k;
    case 'DoesNotExist':
      return `!${k}`;
  }
}

function labelMatches(l: Label, r: Requirement): boolean {
  return l.key === r.key && (r.source === 'any' || l.source === r.source);
}

function requirementHolds(ls: readonly Label[], r: Requirement): boolean {
  let present = false;
  let valueIn = false;
  for (const l of ls) {
    if (!labelMatches(l, r)) continue;
    present = true;
    if (r.values.includes(l.value)) valueIn = true;
  }
  switch (r.op) {
    case 'In':
      return valueIn;
    case 'NotIn':
      return !valueIn;
    case 'Exists':
      return present;
    case 'DoesNotExist':
      return !present;
  }
}

/** A requirement from a selector key (`app`, `k8s:app`, `any:app`), an operator and values. */
export function requirement(selectorKey: string, op: Operator, values: readonly string[] = []): Requirement {
  const { source, key } = splitSelectorKey(selectorKey);
  return { source, key, op, values: [...new Set(values)].sort() };
}

/** A label selector from requirements; no requirement at all selects everything. */
export function labelSelector(reqs: readonly Requirement[]): Selector {
  const texts = [...new Set(reqs.map(reqText))].sort();
  if (texts.length === 0) return WILDCARD;
  const all = [...reqs];
  return Object.freeze({
    kind: 'labels' as const,
    key: texts.join('&'),
    matches: (id: Identity) => all.every((r) => requirementHolds(id.labelSet, r)),
  });
}

/** Whether a selector has a requirement on a key (any source). */
export function hasRequirementOn(reqs: readonly Requirement[], key: string): boolean {
  return reqs.some((r) => r.key === key);
}

/**
 * A CIDR selector: CIDR identities inside the prefix and inside none of the `except` prefixes;
 * `0.0.0.0/0` and `::/0` also select world. The except prefixes get CIDR identities of their own
 * (compile.ts), so addresses in them never fall back to the world identity this selects.
 */
export function cidrSelector(text: string, except: readonly string[] = []): Selector {
  const c = parseCidr(text);
  const ex = [...new Map(except.map((e) => parseCidr(e)).map((e) => [formatCidr(e), e])).entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const excluded = (id: Identity) => id.labelSet.some((l) => ex.some(([, e]) => inside(e, cidrOfLabel(l))));
  return Object.freeze({
    kind: 'cidr' as const,
    key: `cidr:${formatCidr(c)}${ex.length ? ` except ${ex.map(([k]) => k).join(',')}` : ''}`,
    matches: (id: Identity) =>
      ((c.prefix === 0 && isWorldIdentity(id) && !id.labelSet.some((l) => l.source === 'cidr')) || id.labelSet.some((l) => inside(c, cidrOfLabel(l)))) && !excluded(id),
  });
}

function inside(outer: Cidr, inner: Cidr | undefined): boolean {
  return inner !== undefined && cidrContains(outer, inner);
}

/**
 * A Kubernetes NetworkPolicy ipBlock: what `cidrSelector(text, except)` selects (CIDR identities,
 * world for /0), plus every endpoint identity whose endpoints' addresses are all inside `text` and
 * none inside an `except` prefix. Per identity and fail closed: an identity with no known address,
 * or with one endpoint inside and another outside the block, is not selected (its endpoints inside
 * are then not allowed by the block either; they can be allowed by a pod or namespace selector).
 */
export function ipBlockSelector(text: string, except: readonly string[] = []): Selector {
  const base = cidrSelector(text, except);
  const c = parseCidr(text);
  const ex = except.map((e) => parseCidr(e));
  const within = (a: string) => {
    const addr = parseAddr(a);
    return addr !== undefined && cidrContainsAddr(c, addr) && !ex.some((e) => cidrContainsAddr(e, addr));
  };
  return Object.freeze({
    kind: 'cidr' as const,
    key: `ipblock:${base.key.slice('cidr:'.length)}`,
    byAddress: true,
    matches: (id: Identity, addresses?: readonly string[]) =>
      base.matches(id) || (addresses !== undefined && addresses.length > 0 && isEndpointIdentity(id) && addresses.every(within)),
  });
}

/** An identity of endpoints (pods): neither reserved, world nor CIDR. */
function isEndpointIdentity(id: Identity): boolean {
  return !isWorldIdentity(id) && !id.labelSet.some((l) => l.source === 'reserved' || l.source === 'cidr');
}
