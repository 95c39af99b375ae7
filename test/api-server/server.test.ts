import t, { type Test } from 'tap';
import { mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { module, provideInto, testHive, ConfigError } from '../../src/hive/index.js';
import { Transport } from '../../src/api/transport.js';
import { createSpecValidator } from '../../src/api/spec.js';
import {
  apiServerCell, ApiOperationsToken, ApiRoutersToken, ApiServerToken, HttpError, type ApiInput, type ApiOperations,
} from '../../src/cells/api-server/index.js';

const validator = createSpecValidator();

function tempSocket(t: Test, sub = 'run'): string {
  const dir = mkdtempSync(join(tmpdir(), 'cellium-api-'));
  t.teardown(() => import('node:fs').then((fs) => fs.rmSync(dir, { recursive: true, force: true })));
  return join(dir, sub, 'cellium.sock');
}

const seen: ApiInput[] = [];
/** A router serving a few operations the way handler cells do. */
function testRouter(ops: ApiOperations) {
  const r = ops.router();
  ops.serve(r, 'GetHealthz', (_req, res) => res.json({ cilium: { state: 'Ok', msg: 'fine' } }));
  ops.serve(r, 'PutEndpointID', ops.limit('endpoint-create'), (_req, res) => {
    seen.push(res.locals.api);
    const id = Number(String(res.locals.api.path.id).replace(/^cilium-local:/, ''));
    if (id === 409) throw new HttpError(409, 'endpoint 409 exists');
    if (id === 500) throw new Error('boom');
    res.status(201).json({ id, status: { state: 'ready' } });
  });
  ops.serve(r, 'GetEndpointID', (_req, res) => res.json({ id: Number(res.locals.api.path.id), status: { state: 'ready' } }));
  ops.serve(r, 'PutPolicy', (_req, res) => res.json({ revision: 2, policy: String(res.locals.api.body) }));
  ops.serve(r, 'GetCelliumPolicyTrace', (_req, res) => {
    const q = res.locals.api.query;
    res.json({ verdict: 'allowed', ingress: { verdict: 'allowed', enforced: false, rules: [] }, egress: { verdict: 'allowed', enforced: false, rules: [String(q.dport), String(q.proto)] }, log: [] });
  });
  return r;
}
const routesCell = module('test-routes', 'Test routes', provideInto(ApiRoutersToken, (ops: ApiOperations) => ({ name: 'test', router: testRouter(ops) }), ApiOperationsToken));

/** A request with a raw body (the client always sends valid JSON). */
function rawRequest(socketPath: string, method: string, path: string, body: string): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, method, path, headers: { 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function start(t: Test, config: Record<string, unknown> = {}) {
  const socketPath = tempSocket(t);
  const h = await testHive(t, [apiServerCell, routesCell], { config: { 'socket-path': socketPath, ...config } });
  const tr = new Transport({ socketPath });
  t.teardown(() => tr.close());
  return { h, tr, socketPath };
}

t.test('serves on the unix socket with mode 0660, parent dir created, no TCP by default', async (t) => {
  const { h, tr, socketPath } = await start(t);
  t.equal(statSync(socketPath).mode & 0o777, 0o660);
  t.ok(statSync(socketPath).isSocket());
  t.equal(h.get(ApiServerToken).tcpAddress(), undefined);
  const res = await tr.request('GET', '/healthz');
  t.equal(res.status, 200);
  t.same(validator.response('GetHealthz', res.status, res.body), []);
  t.same(h.get(ApiServerToken).served(), ['GetCelliumPolicyTrace', 'GetEndpointID', 'GetHealthz', 'PutEndpointID', 'PutPolicy']);
});

t.test('the socket is removed on stop', async (t) => {
  const socketPath = tempSocket(t);
  const h = await testHive(t, [apiServerCell, routesCell], { config: { 'socket-path': socketPath }, start: false });
  await h.hive.start();
  t.ok(statSync(socketPath).isSocket());
  await h.hive.stop();
  t.throws(() => statSync(socketPath), /ENOENT/);
});

t.test('TCP only with --api-listen-address (and a token: auth.test.ts)', async (t) => {
  const tokenFile = join(tempSocket(t, 'token'), '..', 'token');
  await import('node:fs').then((fs) => fs.mkdirSync(join(tokenFile, '..'), { recursive: true }));
  writeFileSync(tokenFile, 'a-test-token-of-some-length\n', { mode: 0o600 });
  const { h } = await start(t, { 'api-listen-address': '127.0.0.1:0', 'api-token-file': tokenFile });
  const addr = h.get(ApiServerToken).tcpAddress();
  t.match(addr, /^127\.0\.0\.1:\d+$/);
  const tr = new Transport({ baseUrl: `http://${addr}`, token: 'a-test-token-of-some-length' });
  t.teardown(() => tr.close());
  t.equal((await tr.request('GET', '/healthz')).status, 200);
});

t.test('a bad --api-listen-address is a config error naming the flag', async (t) => {
  await t.rejects(testHive(t, [apiServerCell, routesCell], { config: { 'api-listen-address': 'nonsense' }, start: false }), ConfigError);
  await t.rejects(testHive(t, [apiServerCell, routesCell], { config: { 'api-listen-address': 'nonsense' }, start: false }), /api-listen-address/);
});

t.test('a stale socket is replaced; a live one is refused naming the socket', async (t) => {
  const socketPath = tempSocket(t, 'stale');
  await import('node:fs').then((fs) => fs.mkdirSync(join(socketPath, '..'), { recursive: true }));
  // an agent that died without cleaning up: a process listens there and is killed with SIGKILL
  spawnSync(process.execPath, ['-e', `require('node:net').createServer().listen(${JSON.stringify(socketPath)}, () => process.kill(process.pid, 'SIGKILL'))`]);
  t.ok(statSync(socketPath).isSocket(), 'stale socket left behind');
  const h = await testHive(t, [apiServerCell, routesCell], { config: { 'socket-path': socketPath } });
  const tr = new Transport({ socketPath });
  t.teardown(() => tr.close());
  t.equal((await tr.request('GET', '/healthz')).status, 200);
  t.ok(h);
  const second = await testHive(t, [apiServerCell, routesCell], { config: { 'socket-path': socketPath }, start: false });
  await t.rejects(second.hive.start(), new RegExp(`already serving the API on unix socket ${socketPath.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
  t.equal((await tr.request('GET', '/healthz')).status, 200, 'the first agent still serves');
});

t.test('a regular file where the socket goes is refused', async (t) => {
  const socketPath = tempSocket(t, 'file');
  await import('node:fs').then((fs) => fs.mkdirSync(join(socketPath, '..'), { recursive: true }));
  writeFileSync(socketPath, 'not a socket');
  const h = await testHive(t, [apiServerCell, routesCell], { config: { 'socket-path': socketPath }, start: false });
  await t.rejects(h.hive.start(), /exists and is not a unix socket/);
});

t.test('404 and 405 answer JSON', async (t) => {
  const { tr } = await start(t);
  const nf = await tr.request('GET', '/nothing-here');
  t.equal(nf.status, 404);
  t.match(nf.headers['content-type'], /application\/json/);
  t.match(nf.body, /no such API path: GET \/v1\/nothing-here/);
  const na = await tr.request('POST', '/healthz');
  t.equal(na.status, 405);
  t.equal(na.headers.allow, 'GET');
  t.match(na.body, /POST is not allowed on \/v1\/healthz \(allowed: GET\)/);
  const huge = await tr.request('GET', `/healthz?x=${'a'.repeat(20_000)}`);
  t.equal(huge.status, 431, 'the HTTP parser\'s refusals answer JSON too');
  t.match(huge.body, /malformed HTTP request/);
  const bodyIgnored = await tr.request('GET', '/healthz', { body: { any: 'thing' } });
  t.equal(bodyIgnored.status, 200, 'an operation without a request body ignores one, like Cilium');
  const unserved = await tr.request('GET', '/map');
  t.equal(unserved.status, 501);
  t.match(unserved.body, /GetMap is not served/);
});

t.test('requests are validated: 400 naming the field as a JSON pointer and what was expected', async (t) => {
  const { tr, socketPath } = await start(t);
  const bad = await tr.request('PUT', '/endpoint/12', { body: { state: 'waiting-for-identity', addressing: { ipv4: '10.0.0.300' } } });
  t.equal(bad.status, 400);
  t.same(validator.response('PutEndpointID', 400, bad.body), []);
  const e = (bad.body as { error: { field: string; expected: string; message: string } }).error;
  t.equal(e.field, '/body/addressing/ipv4');
  t.match(e.expected, /ipv4/);
  const unknownField = await tr.request('PUT', '/endpoint/12', { body: { state: 'waiting-for-identity', 'no-such-field': 1 } });
  t.equal((unknownField.body as { error: { field: string } }).error.field, '/body/no-such-field');
  const noState = await tr.request('PUT', '/endpoint/12', { body: { 'container-id': 'abc' } });
  t.equal(noState.status, 400, 'state is required, as in Cilium');
  t.same((noState.body as { error: unknown }).error, { field: '/body/state', message: '/body/state is required', expected: 'a value for state' });
  const badId = await tr.request('PUT', '/endpoint/not%20an%20id', { body: { state: 'waiting-for-identity' } });
  t.equal(badId.status, 400);
  t.equal((badId.body as { error: { field: string } }).error.field, '/path/id');
  const notJson = await rawRequest(socketPath, 'PUT', '/v1/endpoint/12', '{"id": ');
  t.equal(notJson.status, 400);
  t.equal((notJson.body as { error: { field: string } }).error.field, '/body');
  t.match((notJson.body as { error: { message: string } }).error.message, /not valid JSON/);
  const missing = await tr.request('PUT', '/endpoint/12');
  t.equal(missing.status, 400);
  t.match((missing.body as { error: { message: string } }).error.message, /request body is required/);
  const query = await tr.request('GET', '/cellium/policy/trace', { query: { dport: 'eighty' } });
  t.equal(query.status, 400);
  t.equal((query.body as { error: { field: string } }).error.field, '/query/dport');
  const xml = await tr.request('PUT', '/endpoint/12', { body: '<a/>', contentType: 'application/xml' });
  t.equal(xml.status, 400);
  t.equal((xml.body as { error: { field: string } }).error.field, '/header/content-type');
});

t.test('validated values reach the handler coerced; handler errors map to statuses', async (t) => {
  const { tr } = await start(t);
  const res = await tr.request('PUT', '/endpoint/cilium-local:7', { body: { 'container-id': 'abc', state: 'waiting-for-identity', 'sync-build-endpoint': true } });
  t.equal(res.status, 201);
  t.same(validator.response('PutEndpointID', 201, res.body), []);
  t.same(seen.at(-1)?.body, { 'container-id': 'abc', state: 'waiting-for-identity', 'sync-build-endpoint': true });
  const trace = await tr.request('GET', '/cellium/policy/trace', { query: { dport: '80' } });
  t.same((trace.body as { egress: { rules: string[] } }).egress.rules, ['80', 'TCP'], 'dport coerced, proto defaulted');
  const conflict = await tr.request('PUT', '/endpoint/409', { body: { state: 'waiting-for-identity' } });
  t.equal(conflict.status, 409);
  t.equal(conflict.body, 'endpoint 409 exists');
  t.same(validator.response('PutEndpointID', 409, conflict.body), []);
  const failed = await tr.request('PUT', '/endpoint/500', { body: { state: 'waiting-for-identity' } });
  t.equal(failed.status, 500);
  t.match(failed.body, /PutEndpointID failed: boom/);
  const yaml = await tr.request('PUT', '/policy', { body: '- endpointSelector: {}\n', contentType: 'application/yaml' });
  t.equal(yaml.status, 200);
  t.equal((yaml.body as { policy: string }).policy, '- endpointSelector: {}\n');
  const jsonString = await tr.request('PUT', '/policy', { body: '[]' });
  t.equal((jsonString.body as { policy: string }).policy, '[]', 'a JSON string body, as Cilium sends policy');
});

t.test('bodies over the limit get 413', async (t) => {
  const { tr } = await start(t, { 'api-max-body-bytes': 2048 });
  const res = await tr.request('PUT', '/endpoint/1', { body: { state: 'waiting-for-identity', 'container-name': 'x'.repeat(4096) } });
  t.equal(res.status, 413);
  t.equal(res.headers['x-cellium-max-body-bytes'], '2048', 'the limit in a header (the CNI shim reports it)');
});

t.test('rate limiting: 429 with Retry-After once the wait would exceed the maximum', async (t) => {
  const { tr } = await start(t, { 'api-rate-limit': 'endpoint-create=rate-limit:1/m,rate-burst:1,max-wait-duration:50ms,auto-adjust:false,skip-initial:0' });
  t.equal((await tr.request('PUT', '/endpoint/1', { body: { state: 'waiting-for-identity' } })).status, 201);
  const limited = await tr.request('PUT', '/endpoint/2', { body: { state: 'waiting-for-identity' } });
  t.equal(limited.status, 429);
  t.equal(limited.headers['retry-after'], '60');
  t.match(limited.body, /endpoint-create: request would have to wait/);
  t.same(validator.response('PutEndpointID', 429, limited.body, limited.headers as Record<string, string>), []);
  t.equal((await tr.request('GET', '/endpoint/2')).status, 200, 'other APIs are not limited by it');
});

t.test('--enable-api-rate-limit=false turns limiting off', async (t) => {
  const { tr } = await start(t, { 'api-rate-limit': 'endpoint-create=rate-limit:1/m,rate-burst:1,max-wait-duration:50ms,skip-initial:0', 'enable-api-rate-limit': false });
  for (let i = 1; i <= 5; i++) t.equal((await tr.request('PUT', `/endpoint/${i}`, { body: { state: 'waiting-for-identity' } })).status, 201);
});

t.test('bad --api-rate-limit syntax is a config error naming the key', async (t) => {
  await t.rejects(
    testHive(t, [apiServerCell, routesCell], { config: { 'api-rate-limit': 'endpoint-create=rate-limt:10/s' }, start: false }),
    /api-rate-limit.*endpoint-create: unknown rate limiting option "rate-limt"/,
  );
  await t.rejects(
    testHive(t, [apiServerCell, routesCell], { config: { 'api-rate-limit': 'endpoint-get=rate-limit:10/10' }, start: false }),
    /needs a unit/,
  );
});

t.test('a route group naming an operation twice or one the spec lacks fails at start', async (t) => {
  const socketPath = tempSocket(t);
  const one = (id: string) => (ops: ApiOperations) => {
    const r = ops.router();
    ops.serve(r, id, (_req, res) => res.end());
    return r;
  };
  const dup = module('dup', 'Dup', provideInto(ApiRoutersToken, (ops: ApiOperations) => ({ name: 'dup', router: one('GetHealthz')(ops) }), ApiOperationsToken));
  await t.rejects(testHive(t, [apiServerCell, routesCell, dup], { config: { 'socket-path': socketPath } }), /GetHealthz is served twice: by route group "test" and by "dup"/);
  const unknown = module('unk', 'Unknown', provideInto(ApiRoutersToken, (ops: ApiOperations) => ({ name: 'unk', router: one('GetNothing')(ops) }), ApiOperationsToken));
  await t.rejects(testHive(t, [apiServerCell, unknown], { config: { 'socket-path': socketPath } }), /does not define/);
});
