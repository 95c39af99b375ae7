/** Durations as Go-style strings (`5m`, `30s`, `1h30m`, `250ms`) to and from milliseconds. */

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Parses `5m`, `30s`, `1h30m`, `250ms`, `0` or a number of milliseconds. Throws on anything else. */
export function parseDuration(raw: unknown): number {
  if (typeof raw === 'number' && Number.isFinite(raw) && raw >= 0) return raw;
  if (typeof raw !== 'string') throw new Error(`expected a duration such as 30s or 5m, got ${JSON.stringify(raw)}`);
  const s = raw.trim();
  if (s === '0') return 0;
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h)/gy;
  let total = 0;
  let consumed = 0;
  for (let m = re.exec(s); m; m = re.exec(s)) {
    total += Number(m[1]) * UNIT_MS[m[2]!]!;
    consumed = re.lastIndex;
  }
  if (consumed === 0 || consumed !== s.length) {
    throw new Error(`expected a duration such as 30s, 5m or 1h30m (units ms, s, m, h), got ${JSON.stringify(raw)}`);
  }
  return Math.round(total);
}

/** Formats milliseconds as the shortest Go-style duration (`300000` -> `5m`). */
export function formatDuration(ms: number): string {
  if (ms === 0) return '0s';
  let rest = ms;
  let out = '';
  for (const [unit, size] of [['h', 3_600_000], ['m', 60_000], ['s', 1000]] as const) {
    if (rest >= size) {
      out += `${Math.floor(rest / size)}${unit}`;
      rest %= size;
    }
  }
  if (rest > 0) out += `${rest}ms`;
  return out;
}
