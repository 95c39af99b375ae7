/** Port ranges of policy entries: the range an entry covers, LPM prefix blocks and subtraction. */

/** An inclusive port range. */
export type Range = readonly [lo: number, hi: number];

/** The range of an entry: port 0 is every port, otherwise port..endPort (or the port alone). */
export function rangeOf(e: { readonly port: number; readonly endPort?: number }): Range {
  return e.port === 0 ? [0, 65535] : [e.port, e.endPort !== undefined && e.endPort > e.port ? e.endPort : e.port];
}

/** Whether a range is exactly one LPM prefix (an aligned power-of-two block). */
export function isPrefixBlock([lo, hi]: Range): boolean {
  const size = hi - lo + 1;
  return (size & (size - 1)) === 0 && lo % size === 0;
}

/** Whether `outer` contains `inner`. */
export function contains(outer: Range, inner: Range): boolean {
  return outer[0] <= inner[0] && inner[1] <= outer[1];
}

/** `a` minus `d`: up to two ranges. */
export function subtract(a: Range, d: Range): Range[] {
  if (d[1] < a[0] || d[0] > a[1]) return [a];
  const out: Range[] = [];
  if (a[0] < d[0]) out.push([a[0], d[0] - 1]);
  if (d[1] < a[1]) out.push([d[1] + 1, a[1]]);
  return out;
}

/** Whether a port lies in a range. */
export function inRange(port: number, [lo, hi]: Range): boolean {
  return port >= lo && port <= hi;
}
