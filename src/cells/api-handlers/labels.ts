/** Label filters of the list operations (GET /endpoint, /identity, /policy take a Labels body, as in Cilium). */
import { parseLabel, type Label } from '../../lib/labels.js';
import { badField } from '../api-server/index.js';

/** Parses a Labels body; a label that does not parse is a 400 naming `/body/<index>`. */
export function parseFilter(body: unknown): Label[] {
  const raw = Array.isArray(body) ? (body as string[]) : [];
  return raw.map((l, i) => {
    try {
      return parseLabel(l);
    } catch (err) {
      throw badField(`/body/${i}`, (err as Error).message, 'a label such as k8s:app=web');
    }
  });
}

/** Whether `have` (labels as `source:key=value`) holds every label of `want`; a want without a source (unspec) or with `any` matches every source. */
export function matchesAll(have: readonly string[], want: readonly Label[]): boolean {
  if (want.length === 0) return true;
  const parsed = have.flatMap((h) => {
    try {
      return [parseLabel(h)];
    } catch {
      return [];
    }
  });
  return want.every((w) => parsed.some((h) => h.key === w.key && h.value === w.value && (w.source === 'unspec' || w.source === 'any' || w.source === h.source)));
}
