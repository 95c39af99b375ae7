/**
 * Request targets as every server of the API reads them: dot segments resolved and percent-escapes
 * normalized the way WHATWG URL parsing does (what checkHttpRequest and the tests' fake agents use),
 * so `/v1/./healthz` is `/v1/healthz` everywhere. Plain targets, the usual case, skip URL parsing.
 */

/** Base for parsing request targets (only the path and query are used). */
const BASE = 'http://agent';

/** A request target with nothing for URL parsing to normalize: a path of plain characters, no dot segment. */
const PLAIN_TARGET = /^\/(?![/.])(?:[A-Za-z0-9_~:@!$&'()*+,;=-]|\.(?![./?]|$)|\/(?!\.))*(?:\?[^#\s]*)?$/;

/**
 * The path and query of a request target, parsed the way WHATWG URL parses it; a plain target is
 * split without building a URL. Undefined when it does not parse.
 */
export function parseTarget(url: string): { pathname: string; search: string } | undefined {
  if (PLAIN_TARGET.test(url)) {
    const q = url.indexOf('?');
    return q < 0 ? { pathname: url, search: '' } : { pathname: url.slice(0, q), search: url.slice(q) };
  }
  try {
    const u = new URL(url, BASE);
    return { pathname: u.pathname, search: u.search };
  } catch {
    return undefined;
  }
}

/** The target normalized (path and query only); unchanged when plain, undefined when it does not parse. */
export function normalizeTarget(url: string): string | undefined {
  if (PLAIN_TARGET.test(url)) return url;
  const t = parseTarget(url);
  return t && t.pathname + t.search;
}
