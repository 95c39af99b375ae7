/**
 * Hubble's label filters (`--label`, FlowFilter source_label/destination_label): a Kubernetes
 * label selector over a flow endpoint's labels (`source:key=value`). A key without a source
 * (`app`) matches that key from any source; `k8s:app` only from that one.
 */

/** One requirement of a selector. */
interface Requirement {
  readonly key: string;
  readonly op: 'in' | 'notin' | 'exists' | 'notexists';
  readonly values: readonly string[];
}

/** Why a selector cannot be parsed: names the selector and shows the syntax. */
export class LabelSelectorError extends Error {
  constructor(selector: string, why: string) {
    super(`label selector ${JSON.stringify(selector)}: ${why} (use key=value, key!=value, key in (a,b), key notin (a,b), key or !key, joined by commas)`);
    this.name = 'LabelSelectorError';
  }
}

/** Splits at commas outside parentheses. */
function terms(s: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of s) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      out.push(cur);
      cur = '';
    } else cur += ch;
  }
  out.push(cur);
  return out.map((t) => t.trim()).filter((t) => t !== '');
}

const KEY = /^[A-Za-z0-9_.:/-]+$/;

function requirement(selector: string, t: string): Requirement {
  const set = /^(\S+)\s+(in|notin)\s*\(([^)]*)\)$/.exec(t);
  if (set) return { key: set[1]!, op: set[2] as 'in' | 'notin', values: set[3]!.split(',').map((v) => v.trim()) };
  const eq = /^([^=!\s]+)\s*(==|=|!=)\s*(\S*)$/.exec(t);
  if (eq) return { key: eq[1]!, op: eq[2] === '!=' ? 'notin' : 'in', values: [eq[3]!] };
  if (t.startsWith('!') && KEY.test(t.slice(1))) return { key: t.slice(1), op: 'notexists', values: [] };
  if (KEY.test(t)) return { key: t, op: 'exists', values: [] };
  throw new LabelSelectorError(selector, `cannot read ${JSON.stringify(t)}`);
}

/** The values of `key` among `labels` (`source:key=value`); a key without a source matches any source. */
function valuesOf(labels: readonly string[], key: string): string[] {
  const withSource = key.includes(':');
  const out: string[] = [];
  for (const l of labels) {
    const eq = l.indexOf('=');
    const k = eq < 0 ? l : l.slice(0, eq);
    const v = eq < 0 ? '' : l.slice(eq + 1);
    const bare = k.slice(k.indexOf(':') + 1);
    if (withSource ? k === key : bare === key) out.push(v);
  }
  return out;
}

/** Compiles a selector into a predicate on a label list; throws LabelSelectorError. */
export function labelSelector(selector: string): (labels: readonly string[]) => boolean {
  const reqs = terms(selector).map((t) => requirement(selector, t));
  if (reqs.length === 0) throw new LabelSelectorError(selector, 'it is empty');
  return (labels) => reqs.every((r) => {
    const vs = valuesOf(labels, r.key);
    switch (r.op) {
      case 'exists':
        return vs.length > 0;
      case 'notexists':
        return vs.length === 0;
      case 'in':
        return vs.some((v) => r.values.includes(v));
      case 'notin':
        return !vs.some((v) => r.values.includes(v));
    }
  });
}
