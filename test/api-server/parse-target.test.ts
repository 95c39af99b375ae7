// The API router's request-target parsing: the fast path for plain targets must agree with WHATWG
// URL parsing (what checkHttpRequest and every other server use) on path and query, dot segments,
// percent-escapes, protocol-relative and non-ASCII targets included.
import t from 'tap';
import { normalizeTarget, parseTarget } from '../../src/cells/api-server/target.js';

const CASES = [
  '/v1/healthz', '/v1/endpoint/12?x=1&y=%20a&x=2', '/v1/endpoint/container-id:abc', '/v1/endpoint/pod-name:ns/p',
  '/v1/../v1/healthz', '/v1/./healthz', '//v1/healthz', '/v1/a.b/c', '/v1/a%2e%2e/c', '/v1/x?q="<>`', '/v1/endpoint/ipv6:fd00::1',
  '/v1/end point', '/v1/healthz/.', '/v1/healthz/..', '/.', '/v1/é', "/v1/a'b", '/v1/healthz?', '/v1/x?a=1#frag', '/v1/a\\b', '/v1/.hidden',
];

t.test('plain and tricky targets parse exactly as WHATWG URL parses them', async (t) => {
  for (const target of CASES) {
    const ours = parseTarget(target);
    const url = new URL(target, 'http://agent');
    t.same(ours && [ours.pathname, [...new URLSearchParams(ours.search)]], [url.pathname, [...url.searchParams]], JSON.stringify(target));
    const normalized = normalizeTarget(target);
    t.equal(normalized && new URL(normalized, 'http://agent').pathname, url.pathname, `${JSON.stringify(target)} normalized`);
  }
});

t.test('a target URL cannot parse gives undefined', async (t) => {
  t.equal(parseTarget('http://[::1'), undefined);
  t.equal(normalizeTarget('http://[::1'), undefined);
});
