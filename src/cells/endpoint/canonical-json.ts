/** JSON with object keys sorted, so equal values always render (and hash) equally. */

/** Renders `v` as JSON with every object's keys sorted. */
export function canonicalJSON(v: unknown): string {
  return JSON.stringify(v, (_k, val: unknown) =>
    val && typeof val === 'object' && !Array.isArray(val)
      ? Object.fromEntries(Object.entries(val as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : val,
  );
}
