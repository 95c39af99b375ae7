/** Parsers of CLI arguments; each throws UsageError with what was expected. */
import { parseDuration } from '../hive/config/duration.js';
import type { TraceProtocol } from '../api/models.js';
import { UsageError } from './errors.js';

const PROTOCOLS: readonly TraceProtocol[] = ['TCP', 'UDP', 'SCTP', 'ICMP', 'ICMPV6', 'ANY'];

/** `80`, `80/TCP`, `53/udp`: a port (0-65535) and a protocol (TCP when not given). */
export function parsePortProtocol(raw: string): { port: number; protocol: TraceProtocol } {
  const m = /^(\d{1,5})(?:\/([A-Za-z0-9]+))?$/.exec(raw.trim());
  const port = m ? Number(m[1]) : NaN;
  if (!m || port > 65535) throw new UsageError(`invalid port "${raw}": expected PORT or PORT/PROTOCOL, e.g. 80/TCP (port 0-65535)`);
  const protocol = (m[2] ?? 'TCP').toUpperCase() as TraceProtocol;
  if (!PROTOCOLS.includes(protocol)) throw new UsageError(`invalid protocol "${m[2]}" in "${raw}": expected one of ${PROTOCOLS.join(', ')}`);
  return { port, protocol };
}

/** `KEY=VALUE` pairs into an object; a later key wins. */
export function parseKeyValues(pairs: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const p of pairs) {
    const i = p.indexOf('=');
    if (i <= 0) throw new UsageError(`invalid setting "${p}": expected KEY=VALUE`);
    out[p.slice(0, i).trim()] = p.slice(i + 1).trim();
  }
  return out;
}

/** A trace side: one numeric identity, or labels (`k8s:app=web`; no source means `any:`). */
export function parseTraceSubject(values: readonly string[], flag: string): { identity: number } | { labels: string[] } {
  if (values.length === 0) throw new UsageError(`${flag} is required: labels (e.g. ${flag} k8s:app=web) or a numeric identity`);
  if (values.length === 1 && /^\d+$/.test(values[0]!)) return { identity: Number(values[0]) };
  if (values.some((v) => /^\d+$/.test(v))) throw new UsageError(`${flag}: give either one numeric identity or labels, not both`);
  return { labels: values.flatMap((v) => v.split(',')).map((v) => v.trim()).filter(Boolean) };
}

/** Commander collector for repeatable options. */
export function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

/**
 * A CLI duration in seconds: a bare number is seconds (`30`), anything else the config's duration
 * syntax (`500ms`, `30s`, `2m`, `1h30m`: the one parser, src/hive/config/duration.ts); a
 * UsageError otherwise.
 */
export function parseSeconds(raw: string): number {
  const text = raw.trim();
  if (/^\d+(?:\.\d+)?$/.test(text)) return Number(text);
  try {
    return parseDuration(text) / 1000;
  } catch {
    throw new UsageError(`invalid duration "${raw}": expected e.g. 30s, 2m, 1h30m or 500ms`);
  }
}

/**
 * `-H/--host`: `http://HOST:PORT`, `https://HOST:PORT`, or `HOST:PORT` (http assumed), to the base
 * URL the client takes; anything else (another scheme, no host, a path) is a UsageError with an example.
 */
export function parseHost(raw: string): string {
  const text = raw.trim();
  const bad = (why: string): UsageError => new UsageError(`invalid --host "${raw}": ${why}; expected http://HOST:PORT or https://HOST:PORT (e.g. http://127.0.0.1:9234, see cellium-agent --api-listen-address)`);
  let u: URL;
  try {
    u = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `http://${text}`);
  } catch {
    throw bad('not a URL');
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw bad(`the agent API speaks http or https, not ${u.protocol.slice(0, -1)}`);
  if (!u.hostname) throw bad('no host');
  if ((u.pathname !== '/' && u.pathname !== '') || u.search || u.hash || u.username) throw bad('only a host and a port');
  return `${u.protocol}//${u.host}`;
}
