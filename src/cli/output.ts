/** Human output of the CLI: aligned tables (multi-line cells), key/value blocks, JSON. */

/** A cell: text, lines (one per line), or nothing. */
export type Cell = string | number | boolean | readonly string[] | undefined | null;

const lines = (c: Cell): string[] => {
  if (c === undefined || c === null || c === '') return [''];
  if (Array.isArray(c)) return c.length ? c.map(String) : [''];
  return String(c).split('\n');
};

/**
 * Renders rows under upper-case headers, columns separated by three spaces, a multi-line cell
 * continuing on the following lines (like Cilium's endpoint list). Ends with a newline.
 */
export function table(headers: readonly string[], rows: readonly (readonly Cell[])[]): string {
  const cells = rows.map((r) => headers.map((_, i) => lines(r[i])));
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((r) => Math.max(...r[i]!.map((l) => l.length)))));
  const fmt = (parts: readonly string[]): string =>
    parts
      .map((p, i) => (i === parts.length - 1 ? p : p.padEnd(widths[i]!)))
      .join('   ')
      .trimEnd();
  const out = [fmt(headers.map((h) => h.toUpperCase()))];
  for (const r of cells) {
    const height = Math.max(...r.map((c) => c.length));
    for (let k = 0; k < height; k++) out.push(fmt(r.map((c) => c[k] ?? '')));
  }
  return out.join('\n') + '\n';
}

/** Renders `Key: value` lines with the values aligned; multi-line values indent their continuation. */
export function keyValues(pairs: readonly (readonly [string, Cell])[]): string {
  const shown = pairs.filter(([, v]) => v !== undefined && v !== null);
  const width = Math.max(0, ...shown.map(([k]) => k.length + 1));
  const out: string[] = [];
  for (const [k, v] of shown) {
    const [first, ...rest] = lines(v);
    out.push(`${(k + ':').padEnd(width)}   ${first}`.trimEnd());
    for (const l of rest) out.push(`${' '.repeat(width)}   ${l}`);
  }
  return out.join('\n') + '\n';
}

/** JSON as the CLI prints it with `-o json`: two-space indent and a trailing newline. */
export function json(value: unknown): string {
  return JSON.stringify(value ?? null, null, 2) + '\n';
}
