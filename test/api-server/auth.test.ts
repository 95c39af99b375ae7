// Authentication of the TCP API (issue 22, point 1): the agent refuses to listen on TCP without a
// bearer token or TLS client certificates, refuses token files others can read and empty or short
// tokens, listens on loopback for `:PORT`; requests without the token, with a wrong one, without a
// client certificate or with one of another CA are refused, valid ones served; the unix socket
// needs neither.
import t, { type Test } from 'tap';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { module, provideInto, testHive } from '../../src/hive/index.js';
import { Transport, type TcpApiTarget } from '../../src/api/transport.js';
import { AgentUnreachableError } from '../../src/api/errors.js';
import { apiServerCell, ApiAuthConfigError, ApiOperationsToken, ApiRoutersToken, ApiServerToken, type ApiOperations } from '../../src/cells/api-server/index.js';
import { makeTestPki, writeToken, type TestPki } from './tls-fixtures.js';

const TOKEN = 'k3Q9-vT2pX7_wL4zR8mN1sB6';

const writes: string[] = [];
const routesCell = module(
  'test-routes',
  'Test routes',
  provideInto(
    ApiRoutersToken,
    (ops: ApiOperations) => {
      const r = ops.router();
      ops.serve(r, 'GetHealthz', (_req, res) => res.json({ cilium: { state: 'Ok', msg: 'fine' } }));
      ops.serve(r, 'PutPolicy', (_req, res) => {
        writes.push(String(res.locals.api.body));
        res.json({ revision: 2, policy: '[]' });
      });
      return { name: 'test', router: r };
    },
    ApiOperationsToken,
  ),
);

function socketIn(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'cellium-auth-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return join(dir, 'cellium.sock');
}

async function agent(t: Test, config: Record<string, unknown>) {
  const socketPath = socketIn(t);
  const h = await testHive(t, [apiServerCell, routesCell], { config: { 'socket-path': socketPath, ...config } });
  return { socketPath, addr: h.get(ApiServerToken).tcpAddress()! };
}

function client(t: Test, target: TcpApiTarget | { socketPath: string }): Transport {
  const tr = new Transport(target, { timeoutMs: 10_000 });
  t.teardown(() => tr.close());
  return tr;
}

const tls = (pki: TestPki, cert = pki.clientCert, key = pki.clientKey) => ({ ca: [readFileSync(pki.caCert)], cert: readFileSync(cert), key: readFileSync(key) });

t.test('TCP without authentication: the agent does not start, the error names the flags', async (t) => {
  const err = await testHive(t, [apiServerCell, routesCell], { config: { 'socket-path': socketIn(t), 'api-listen-address': '127.0.0.1:0' }, start: false }).catch((e: unknown) => e);
  let cause = err;
  while (cause instanceof Error && !(cause instanceof ApiAuthConfigError) && cause.cause) cause = cause.cause;
  t.type(cause, ApiAuthConfigError, 'the cause is an ApiAuthConfigError');
  await t.rejects(testHive(t, [apiServerCell, routesCell], { config: { 'socket-path': socketIn(t), 'api-listen-address': '127.0.0.1:0' }, start: false }), /--api-listen-address: .*unauthenticated; fix: give --api-token-file FILE .* or --api-tls-client-ca-files/);
});

const bin = join(import.meta.dirname, '../../bin/cellium-agent.js');
const built = existsSync(join(import.meta.dirname, '../../dist/src/cmd/agent.js'));

t.test('the agent process with --api-listen-address and no authentication exits 1 saying what to give', { skip: built ? false : 'dist/ not built: run npm run build (npm test builds it)' }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cellium-auth-agent-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const flags = [`--state-dir=${dir}/state`, `--socket-path=${dir}/cellium.sock`, '--datapath-mode=memory', `--bpf-root=${dir}/bpf`, `--cni-delete-queue-dir=${dir}/dq`, '--bpf-lb-sock=false'];
  const r = spawnSync(process.execPath, [bin, ...flags, '--api-listen-address=:9234'], { encoding: 'utf8', timeout: 120_000 });
  t.equal(r.status, 1, 'exit 1');
  t.match(r.stderr, /--api-listen-address: the TCP API would serve every operation .* unauthenticated; fix: give --api-token-file FILE/);
  t.notMatch(r.stderr, /API server listening on TCP/);
});

t.test('token files others can read, empty or short tokens, half-given TLS are refused at start', async (t) => {
  const pki = makeTestPki(t);
  const cases: Array<[string, Record<string, unknown>, RegExp]> = [
    ['world-readable token', { 'api-token-file': writeToken(pki, 'public', TOKEN, 0o644) }, /--api-token-file: .*public has mode 644: every user of the machine may read it; fix: chmod o-rwx/],
    ['empty token', { 'api-token-file': writeToken(pki, 'empty', '\n') }, /--api-token-file: .*empty is empty/],
    ['short token', { 'api-token-file': writeToken(pki, 'short', 'abc123\n') }, /fewer than 16/],
    ['token with a space', { 'api-token-file': writeToken(pki, 'spaced', 'abcdefgh ijklmnopq') }, /spaces, control or non-ASCII/],
    ['missing token file', { 'api-token-file': join(pki.dir, 'nothing') }, /--api-token-file: cannot read .*ENOENT/],
    ['cert without key', { 'api-tls-cert-file': pki.serverCert, 'api-tls-client-ca-files': pki.caCert }, /--api-tls-key-file: --api-tls-cert-file is given without it/],
    ['client CA without TLS', { 'api-tls-client-ca-files': pki.caCert }, /--api-tls-client-ca-files: client certificates need the TCP API to serve TLS/],
    ['TLS without client CA or token', { 'api-tls-cert-file': pki.serverCert, 'api-tls-key-file': pki.serverKey }, /unauthenticated/],
    ['key others can read', { 'api-tls-cert-file': pki.serverCert, 'api-tls-key-file': writeToken(pki, 'open.key', readFileSync(pki.serverKey, 'utf8'), 0o604), 'api-tls-client-ca-files': pki.caCert }, /--api-tls-key-file: .*open.key has mode 604/],
    ['a certificate that is no PEM', { 'api-tls-cert-file': writeToken(pki, 'junk.crt', 'not a certificate'), 'api-tls-key-file': pki.serverKey, 'api-tls-client-ca-files': pki.caCert }, /--api-tls-cert-file: the certificate and key cannot be used \(.*\); fix: give a PEM certificate/],
    ['a key of another certificate', { 'api-tls-cert-file': pki.serverCert, 'api-tls-key-file': pki.clientKey, 'api-tls-client-ca-files': pki.caCert }, /--api-tls-cert-file: the certificate and key cannot be used \(.*key values mismatch.*\)/],
    ['a CA that is no PEM', { 'api-tls-cert-file': pki.serverCert, 'api-tls-key-file': pki.serverKey, 'api-tls-client-ca-files': writeToken(pki, 'junk-ca.crt', 'junk') }, /--api-tls-client-ca-files: a CA certificate cannot be used/],
    ['plain-text token off loopback', { 'api-listen-address': '0.0.0.0:0', 'api-token-file': writeToken(pki, 'ok', TOKEN) }, /--api-token-file: over plain HTTP on 0\.0\.0\.0 the token would cross the network in clear text/],
  ];
  for (const [name, config, message] of cases) {
    await t.rejects(testHive(t, [apiServerCell, routesCell], { config: { 'socket-path': socketIn(t), 'api-listen-address': '127.0.0.1:0', ...config }, start: false }), message, name);
  }
});

t.test(':PORT listens on loopback, not on every interface', async (t) => {
  const pki = makeTestPki(t);
  const { addr } = await agent(t, { 'api-listen-address': ':0', 'api-token-file': writeToken(pki, 'token', `${TOKEN}\n`) });
  t.match(addr, /^127\.0\.0\.1:\d+$/);
});

t.test('bearer token: none, wrong or of another scheme is 401; the right one is served; the socket needs none', async (t) => {
  const pki = makeTestPki(t);
  const { addr, socketPath } = await agent(t, { 'api-listen-address': '127.0.0.1:0', 'api-token-file': writeToken(pki, 'token', `${TOKEN}\n`, 0o640) });
  const baseUrl = `http://${addr}`;
  writes.length = 0;
  for (const [name, target, headers] of [
    ['no token', { baseUrl }, {}],
    ['wrong token', { baseUrl, token: `${TOKEN.slice(0, -1)}x` }, {}],
    ['a prefix of the token', { baseUrl, token: TOKEN.slice(0, 8) }, {}],
    ['basic auth', { baseUrl }, { authorization: `Basic ${Buffer.from(`a:${TOKEN}`).toString('base64')}` }],
    ['token without scheme', { baseUrl }, { authorization: TOKEN }],
  ] as const) {
    const tr = client(t, target);
    const get = await tr.request('GET', '/healthz', { headers });
    t.equal(get.status, 401, name);
    t.match(get.headers['www-authenticate'], /^Bearer realm="cellium-agent"/, name);
    t.match(get.body, /token/, name);
    const put = await tr.request('PUT', '/policy', { headers, body: '[]' });
    t.equal(put.status, 401, `${name}: write refused`);
  }
  t.same(writes, [], 'no refused write reached a handler');
  const ok = client(t, { baseUrl, token: TOKEN });
  t.equal((await ok.request('GET', '/healthz')).status, 200);
  t.equal((await ok.request('PUT', '/policy', { body: '[]' })).status, 200);
  t.equal(writes.length, 1);
  t.equal((await client(t, { socketPath }).request('GET', '/healthz')).status, 200, 'the unix socket keeps its file-permission model');
});

t.test('TLS client certificates: none, or one of another CA, is refused in the handshake; the CA\'s is served', async (t) => {
  const pki = makeTestPki(t);
  const { addr } = await agent(t, { 'api-listen-address': '127.0.0.1:0', 'api-tls-cert-file': pki.serverCert, 'api-tls-key-file': pki.serverKey, 'api-tls-client-ca-files': pki.caCert });
  const baseUrl = `https://${addr}`;
  t.equal((await client(t, { baseUrl, tls: tls(pki) }).request('GET', '/healthz')).status, 200);
  await t.rejects(client(t, { baseUrl, tls: { ca: [readFileSync(pki.caCert)] } }).request('GET', '/healthz'), AgentUnreachableError, 'no client certificate');
  await t.rejects(client(t, { baseUrl, tls: tls(pki, pki.rogueClientCert, pki.rogueClientKey) }).request('PUT', '/policy', { body: '[]' }), AgentUnreachableError, 'a client certificate of another CA');
  await t.rejects(client(t, { baseUrl, tls: { ...tls(pki), ca: [readFileSync(pki.rogueCaCert)] } }).request('GET', '/healthz'), /TLS with the agent failed/, 'the client checks the agent\'s certificate too');
  await t.rejects(client(t, { baseUrl: `http://${addr}` }).request('GET', '/healthz'), 'plain HTTP to the TLS port');
});

t.test('TLS and a token: both are required', async (t) => {
  const pki = makeTestPki(t);
  const { addr } = await agent(t, {
    'api-listen-address': '127.0.0.1:0', 'api-tls-cert-file': pki.serverCert, 'api-tls-key-file': pki.serverKey, 'api-tls-client-ca-files': pki.caCert, 'api-token-file': writeToken(pki, 'token', TOKEN),
  });
  const baseUrl = `https://${addr}`;
  t.equal((await client(t, { baseUrl, tls: tls(pki) }).request('GET', '/healthz')).status, 401, 'a certificate without the token');
  t.equal((await client(t, { baseUrl, tls: tls(pki), token: TOKEN }).request('GET', '/healthz')).status, 200);
});

t.test('TLS with a token and no client CA: off loopback too (the token is not in clear text)', async (t) => {
  const pki = makeTestPki(t);
  const { addr } = await agent(t, { 'api-listen-address': '0.0.0.0:0', 'api-tls-cert-file': pki.serverCert, 'api-tls-key-file': pki.serverKey, 'api-token-file': writeToken(pki, 'token', TOKEN) });
  const port = addr.split(':').pop();
  const baseUrl = `https://127.0.0.1:${port}`;
  t.equal((await client(t, { baseUrl, tls: { ca: [readFileSync(pki.caCert)] } }).request('GET', '/healthz')).status, 401);
  t.equal((await client(t, { baseUrl, tls: { ca: [readFileSync(pki.caCert)] }, token: TOKEN }).request('GET', '/healthz')).status, 200);
});
