/**
 * A CiliumIdentity's shape, Cilium's (pkg/k8s/identitybackend): metadata.name is the number,
 * `security-labels` the label set (`source:key` -> value), and metadata.labels the `k8s:` labels
 * without their source (for `kubectl get ciliumid -l app=web` and the Namespace column), leaving
 * out those Kubernetes would refuse as labels (Cilium skips the namespace's own labels likewise:
 * they are user input and can be too long); the security labels alone decide the identity.
 */
import { formatLabel, labelsKey, parseLabel, sortLabels } from '../../lib/labels.js';
import type { CiliumIdentity } from './api.js';

/** A Kubernetes label key's name part and value: at most 63 characters, alphanumerics at the ends. */
const NAME_RE = /^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$/;
const PREFIX_RE = /^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$/;
const NAMESPACE_LABELS = 'io.cilium.k8s.namespace.labels.';

function validK8sLabel(key: string, value: string): boolean {
  const slash = key.lastIndexOf('/');
  const [prefix, name] = slash >= 0 ? [key.slice(0, slash), key.slice(slash + 1)] : ['', key];
  if (slash >= 0 && !PREFIX_RE.test(prefix)) return false;
  return NAME_RE.test(name) && (value === '' || NAME_RE.test(value));
}

/** The CiliumIdentity of number `id` for sorted `source:key=value` labels. */
export function identityObject(id: number, labels: readonly string[]): CiliumIdentity {
  const security: Record<string, string> = {};
  const meta: Record<string, string> = {};
  for (const raw of labels) {
    const l = parseLabel(raw);
    security[`${l.source}:${l.key}`] = l.value;
    if (l.source === 'k8s' && !l.key.startsWith(NAMESPACE_LABELS) && validK8sLabel(l.key, l.value)) meta[l.key] = l.value;
  }
  return { apiVersion: 'cilium.io/v2', kind: 'CiliumIdentity', metadata: { name: String(id), labels: meta }, 'security-labels': security };
}

/** The identity's number, or undefined when its name is not one. */
export function idOf(obj: CiliumIdentity): number | undefined {
  const name = obj.metadata?.name ?? '';
  return /^[1-9][0-9]{0,9}$/.test(name) ? Number(name) : undefined;
}

/** The sorted `source:key=value` labels of its security-labels, or undefined when it has none or a bad one. */
export function labelsOf(obj: CiliumIdentity): string[] | undefined {
  const sec = obj['security-labels'];
  if (!sec || typeof sec !== 'object') return undefined;
  const out: string[] = [];
  for (const [k, v] of Object.entries(sec)) {
    if (typeof v !== 'string') return undefined;
    try {
      out.push(formatLabel(parseLabel(v === '' ? k : `${k}=${v}`)));
    } catch {
      return undefined;
    }
  }
  return out.length ? sortLabels(out.map(parseLabel)).map(formatLabel) : undefined;
}

/** The allocator's key of sorted labels (`;`-joined). */
export function keyOfLabels(labels: readonly string[]): string {
  return labelsKey(sortLabels(labels.map(parseLabel)));
}
