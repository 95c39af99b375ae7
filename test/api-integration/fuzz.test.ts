// Fuzzing the agent's API over its socket: 10,000 requests (CELLIUM_FUZZ_REQUESTS) built from valid examples of every
// operation, mutated (wrong types, missing and unknown fields, garbage strings and numbers, broken
// JSON, wrong content types, mangled paths and queries, and what an attacker sends: ids as 1e3 or
// 0x10, a JSON key twice, deep nesting, alias bombs, prototype keys) or made up entirely. Seeded PRNG
// (CELLIUM_FUZZ_SEED), bounded time. The agent must answer every one with 2xx or 4xx, each answer
// must match the spec, a rejected request must leave the endpoint table as it was, and the agent
// must still be healthy at the end.
import t from 'tap';
import { request } from 'node:http';
import { EndpointManagerToken } from '../../src/cells/endpoint/index.js';
import { ApiServerToken } from '../../src/cells/api-server/index.js';
import { startAgent, podRequest, validator } from './agent.js';

const SEED = Number(process.env.CELLIUM_FUZZ_SEED ?? 0x5eed);
/** 10,000 in npm test; the unit tier (scripts/test-unit.sh) sends fewer: CELLIUM_FUZZ_REQUESTS. */
const TOTAL = fuzzRequests(process.env.CELLIUM_FUZZ_REQUESTS);
const BUDGET_MS = 240_000;

function fuzzRequests(raw: string | undefined): number {
  if (raw === undefined) return 10_000;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 1) throw new Error(`CELLIUM_FUZZ_REQUESTS=${raw}: expected a whole number of requests >= 1 (unset for 10,000)`);
  return n;
}

/** Endpoint model fields that must be left out, not reported empty, when a request omitted them. */
const EMPTY_MAC = /\/status\/networking\/(host-)?mac$/;

/** mulberry32: a small seeded PRNG. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

const rnd = prng(SEED);
const int = (n: number): number => Math.floor(rnd() * n);
const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)]!;
const chance = (p: number): boolean => rnd() < p;

const ALPHABET = Array.from('abcXYZ019:/=._-%?#&+ \t\n"\'\\{}[]<>éß日本\u0000\u007f😀');
function randomString(max = 40): string {
  const n = chance(0.05) ? 2000 + int(20_000) : int(max);
  let s = '';
  for (let i = 0; i < n; i++) s += ALPHABET[int(ALPHABET.length)];
  return s;
}

function randomValue(depth = 0): unknown {
  switch (int(depth > 3 ? 6 : 8)) {
    case 0: return randomString();
    case 1: return pick([0, -1, 1, 65535, 65536, 2 ** 31, 2 ** 53 + 1, -(2 ** 63), 1.5, 1e308]);
    case 2: return chance(0.5);
    case 3: return null;
    case 4: return pick(['', '10.0.0.1', 'fd00::1', '02:00:00:00:00:01', 'k8s:app=web', 'ready', 'Enabled', '80/TCP']);
    case 5: return int(100_000);
    case 6: return Array.from({ length: int(4) }, () => randomValue(depth + 1));
    default: return Object.fromEntries(Array.from({ length: int(4) }, () => [pick([randomString(8), 'id', 'labels', 'addressing', 'options', 'user']), randomValue(depth + 1)]));
  }
}

/** Mutates a JSON value: replace, drop or add a field, or change a leaf deep inside. */
function mutate(v: unknown, depth = 0): unknown {
  if (chance(0.15) || depth > 4) return randomValue(depth);
  if (Array.isArray(v)) {
    const out = [...v];
    if (out.length && chance(0.5)) out[int(out.length)] = mutate(out[int(out.length)], depth + 1);
    else if (chance(0.5)) out.push(randomValue(depth + 1));
    else out.splice(int(out.length + 1), 1);
    return out;
  }
  if (v && typeof v === 'object') {
    const out: Record<string, unknown> = { ...(v as Record<string, unknown>) };
    const keys = Object.keys(out);
    const r = rnd();
    if (keys.length && r < 0.5) {
      const k = pick(keys);
      out[k] = mutate(out[k], depth + 1);
    } else if (keys.length && r < 0.7) delete out[pick(keys)];
    else out[chance(0.5) ? randomString(10) : pick(['id', 'state', 'labels', 'sync-build-endpoint', 'options', 'container-id'])] = randomValue(depth + 1);
    return out;
  }
  return randomValue(depth);
}

interface Req { method: string; path: string; body?: string; contentType?: string; operationId?: string }

/** Valid examples of every operation; `id` is an existing endpoint's id. */
function examples(id: number, n: number): Req[] {
  const j = (method: string, path: string, operationId: string, body?: unknown): Req => ({ method, path, operationId, ...(body !== undefined ? { body: JSON.stringify(body), contentType: 'application/json' } : {}) });
  const ip = `10.211.${(n >> 8) & 255}.${n & 255}`;
  return [
    j('GET', '/v1/healthz', 'GetHealthz'),
    j('GET', '/v1/config', 'GetConfig'),
    j('PATCH', '/v1/config', 'PatchConfig', { options: { Debug: pick(['Enabled', 'Disabled']) } }),
    j('GET', '/v1/endpoint', 'GetEndpoint', ['k8s:app=web']),
    j('DELETE', '/v1/endpoint', 'DeleteEndpoint', { 'container-id': `fuzz-${n}` }),
    j('GET', `/v1/endpoint/${id}`, 'GetEndpointID'),
    j('PUT', `/v1/endpoint/0`, 'PutEndpointID', podRequest(n, { ipv4: ip }, { 'container-id': `fuzz-${n}` })),
    j('PATCH', `/v1/endpoint/${id}`, 'PatchEndpointID', { state: 'ready', labels: ['k8s:app=web'] }),
    j('DELETE', `/v1/endpoint/container-id:fuzz-${n}`, 'DeleteEndpointID'),
    j('GET', `/v1/endpoint/${id}/config`, 'GetEndpointIDConfig'),
    j('PATCH', `/v1/endpoint/${id}/config`, 'PatchEndpointIDConfig', { options: { Debug: 'Enabled' } }),
    j('GET', `/v1/endpoint/${id}/labels`, 'GetEndpointIDLabels'),
    j('PATCH', `/v1/endpoint/${id}/labels`, 'PatchEndpointIDLabels', { user: ['k8s:fuzz=yes'] }),
    j('GET', `/v1/endpoint/${id}/log`, 'GetEndpointIDLog'),
    j('GET', `/v1/endpoint/${id}/healthz`, 'GetEndpointIDHealthz'),
    j('GET', '/v1/identity', 'GetIdentity'),
    j('GET', '/v1/identity/2', 'GetIdentityID'),
    j('GET', '/v1/identity/endpoints', 'GetIdentityEndpoints'),
    j('POST', '/v1/ipam?family=ipv4&owner=fuzz', 'PostIpam'),
    j('POST', `/v1/ipam/10.211.200.${n & 255}?owner=fuzz`, 'PostIpamIP'),
    j('DELETE', `/v1/ipam/10.211.200.${n & 255}`, 'DeleteIpamIP'),
    j('GET', '/v1/policy', 'GetPolicy'),
    j('PUT', '/v1/policy', 'PutPolicy', JSON.stringify([{ endpointSelector: { matchLabels: { app: 'web' } }, ingress: [{}], labels: [`k8s:fuzz=${n % 3}`] }])),
    j('DELETE', '/v1/policy', 'DeletePolicy', [`k8s:fuzz=${n % 3}`]),
    j('GET', '/v1/policy/selectors', 'GetPolicySelectors'),
    j('GET', '/v1/map', 'GetMap'),
    j('GET', '/v1/map/cellium_lxc', 'GetMapName'),
    j('GET', '/v1/cellium/policy/trace?src=k8s:app%3Dweb&dst-identity=2&dport=80', 'GetCelliumPolicyTrace'),
    j('GET', '/v1/service', 'GetService'),
    j('GET', `/v1/service/${1 + (n % 5)}`, 'GetServiceID'),
    j('PUT', `/v1/service/${1 + (n % 5)}`, 'PutServiceID', {
      'frontend-address': { ip: `10.96.77.${n % 7}`, port: 80, protocol: pick(['tcp', 'TCP', 'udp', 'ANY']) },
      'backend-addresses': [{ ip: `10.211.9.${1 + (n % 9)}`, port: 8080 }],
      flags: { type: 'ClusterIP' },
    }),
    j('DELETE', `/v1/service/${1 + (n % 5)}`, 'DeleteServiceID'),
    j('POST', '/v1/cellium/service/import', 'PostCelliumServiceImport', [0, 1].map((k) => JSON.stringify({ apiVersion: 'v1', kind: 'Service', metadata: { name: `s${(n + k) % 4}` }, spec: { clusterIP: `10.96.78.${(n + k) % 3}`, ports: [{ port: 80 }] } })).join('\n---\n')),
  ];
}

/** What an attacker sends instead of a valid example (issue 22, point 6): odd numbers in ids, a key twice, deep nesting, alias bombs, prototype keys. */
function hostile(ex: Req): Req {
  switch (int(6)) {
    case 0: return { ...ex, path: ex.path.replace(/\/(\d+)(?=$|[/?])/, `/${pick(['1e3', '0x10', '%2012', '+12', '12.0', '012', '-1', '99999999999999999999', '%D9%A1'])}`) };
    case 1: return { ...ex, body: ex.body?.replace(/^\{"([^"]+)":([^,}]+)/, '{"$1":$2,"$1":$2') ?? '{"a":1,"a":2}', contentType: 'application/json' };
    case 2: return { ...ex, body: `${'['.repeat(100 + int(5000))}${']'.repeat(100 + int(5000))}`.slice(0, 20_000), contentType: pick(['application/json', 'application/yaml', 'text/plain']) };
    case 3: return { ...ex, body: `a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n`, contentType: pick(['application/yaml', 'text/plain']) };
    case 4: return { ...ex, body: `{"options":{${JSON.stringify(pick(['__proto__', 'constructor', 'toString', 'hasOwnProperty']))}:"Enabled"}}`, contentType: 'application/json' };
    default: return { ...ex, path: `${ex.path}${ex.path.includes('?') ? '&' : '?'}dport=${pick(['8e1', '0x50', '%2080', '80.0'])}&src-identity=${pick(['1e0', '-1', '4294967296'])}` };
  }
}

function mangle(path: string): string {
  const [p, q] = path.split('?') as [string, string | undefined];
  const segs = p.split('/');
  switch (int(7)) {
    case 0: segs[int(segs.length)] = encodeURIComponent(randomString(12)); break;
    case 1: segs[int(segs.length)] = pick(['%zz', '%', '..', '', '%2F', '%00', 'cilium-local:', 'pod-name:a', 'ipv4:1.2.3', 'container-id:']); break;
    case 2: segs.push(encodeURIComponent(randomString(6))); break;
    case 3: segs.splice(1 + int(segs.length - 1), 1); break;
    case 4: return `${p}?${encodeURIComponent(randomString(6))}=${encodeURIComponent(randomString(6))}&${q ?? ''}`;
    case 5: return `${p}?${(q ?? 'dport=80').replace(/=[^&]*/, `=${encodeURIComponent(randomString(5))}`)}`;
    default: return `/${encodeURIComponent(randomString(10))}${chance(0.5) ? p : ''}`;
  }
  return segs.join('/') + (q ? `?${q}` : '');
}

/** Makes one fuzz request: a valid example (5%), a mutated one, or garbage. */
function generate(id: number, n: number): Req {
  const ex = pick(examples(id, n));
  const r = rnd();
  if (r < 0.05) return ex;
  if (r < 0.12) return hostile(ex);
  if (r < 0.55 && ex.body !== undefined) return { ...ex, body: JSON.stringify(mutate(JSON.parse(ex.body))) };
  if (r < 0.65 && ex.body !== undefined) {
    const b = ex.body;
    return { ...ex, body: pick([b.slice(0, int(b.length)), b + randomString(3), randomString(60), '', 'null', '[', '{"a":1}{}']) };
  }
  if (r < 0.72) return { ...ex, body: ex.body ?? JSON.stringify(randomValue()), contentType: pick(['text/plain', 'application/xml', 'application/yaml', 'multipart/form-data', 'application/json; charset=latin1', '']) };
  if (r < 0.85) return { method: ex.method, path: mangle(ex.path), body: ex.body, contentType: ex.contentType };
  if (r < 0.92) return { ...ex, method: pick(['GET', 'PUT', 'POST', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD']) };
  return { method: pick(['GET', 'PUT', 'POST', 'PATCH', 'DELETE']), path: `/v1/${encodeURIComponent(randomString(15))}`, body: chance(0.5) ? JSON.stringify(randomValue()) : undefined, contentType: 'application/json' };
}

function send(socketPath: string, req: Req): Promise<{ status: number; headers: Record<string, unknown>; body: unknown }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = {};
    if (req.body !== undefined) {
      headers['content-length'] = String(Buffer.byteLength(req.body));
      if (req.contentType) headers['content-type'] = req.contentType;
    }
    const r = request({ socketPath, method: req.method, path: req.path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body: unknown = text === '' ? undefined : text;
        if (/json/.test(String(res.headers['content-type'])) && text !== '') body = JSON.parse(text);
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body });
      });
    });
    r.on('error', reject);
    r.setTimeout(10_000, () => r.destroy(new Error(`no answer within 10 s to ${req.method} ${req.path.slice(0, 200)} ${req.contentType ?? ''} ${String(req.body).slice(0, 200)}`)));
    r.end(req.body);
  });
}

t.test(`fuzz: ${TOTAL} random and mutated requests (seed ${SEED})`, async (t) => {
  const a = await startAgent(t, { 'enable-api-rate-limit': false, 'ipv4-range': '10.211.0.0/16' });
  const eps = a.h.get(EndpointManagerToken);
  const served = new Set(a.h.get(ApiServerToken).served());
  const seed = await a.call('PutEndpointID', 'PUT', '/endpoint/0', { body: podRequest(1, { ipv4: '10.211.250.1' }) });
  t.equal(seed.status, 201);
  const table = (): string => JSON.stringify(eps.getEndpoints().map((e) => [e.id, e.ipv4, e.containerId, [...e.labels]]));
  const began = Date.now();
  const statuses = new Map<number, number>();
  const failures: string[] = [];
  const emptyMac: string[] = [];
  let sent = 0;
  for (; sent < TOTAL && Date.now() - began < BUDGET_MS; sent++) {
    const ids = eps.getEndpoints().map((e) => e.id);
    let req = generate(ids.length ? pick(ids) : 1, sent + 2);
    if (req.operationId && !served.has(req.operationId)) req = { ...req, path: '/v1/healthz', method: 'GET', operationId: 'GetHealthz' };
    const before = table();
    const res = await send(a.socketPath, req);
    statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
    const what = `#${sent} ${req.method} ${req.path.slice(0, 120)} ${req.contentType ?? ''} ${String(req.body).slice(0, 120)} -> ${res.status} ${JSON.stringify(res.body)?.slice(0, 200)}`;
    if (res.status >= 500 || res.status < 200) failures.push(`5xx: ${what}`);
    if (res.status >= 400 && table() !== before) failures.push(`table changed by a rejected request: ${what}`);
    // node's HTTP parser refuses some requests (request line too long, bad target) before routing: an Error body
    const refusedByParser = typeof res.body === 'string' && res.body.startsWith('malformed HTTP request');
    // the server resolves dot segments like any URL parser (`/v1/endpoint/7/..` is `/v1/endpoint/`)
    const pathname = URL.canParse(req.path, 'http://agent') ? new URL(req.path, 'http://agent').pathname : req.path;
    const match = refusedByParser ? undefined : validator.spec.match(req.method, pathname);
    const problems = req.method === 'HEAD' ? [] : match?.operation ? validator.response(match.operation.operationId, res.status, res.body, res.headers as Record<string, string>) : validator.model('Error', res.body);
    if (problems.length && problems.every((p) => EMPTY_MAC.test(p.field) && /"(host-)?mac":""/.test(JSON.stringify(res.body)))) emptyMac.push(what);
    else if (problems.length) failures.push(`answer does not match the spec (${problems.map((p) => p.message).join('; ')}): ${what}`);
    if (failures.length >= 20) break;
  }
  if (process.env.CELLIUM_FUZZ_DUMP) (await import('node:fs')).writeFileSync(process.env.CELLIUM_FUZZ_DUMP, failures.join('\n'));
  t.same(failures, [], 'every request answered 2xx/4xx, matching the spec, rejected ones changing nothing');
  t.same(emptyMac.slice(0, 3), [], 'endpoint models never carry an empty mac/host-mac');
  t.equal(sent, TOTAL, `sent ${sent} requests in ${Date.now() - began} ms`);
  t.comment(`statuses: ${[...statuses].sort((x, y) => x[0] - y[0]).map(([s, n]) => `${s}x${n}`).join(' ')}`);
  t.ok([...statuses.keys()].some((s) => s >= 200 && s < 300), 'some requests succeeded');
  const health = await a.call('GetHealthz', 'GET', '/healthz');
  t.equal(health.status, 200, 'the agent still answers');
});
