// The CLI on an agent's TCP API with authentication (issue 22, point 1): -H https:// with
// --tls-ca-cert-files, --tls-client-cert-file/--tls-client-key-file and --token-file against the
// real api-server cell; without them the agent refuses and the CLI says what to give.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { module, provideInto, testHive } from '../../src/hive/index.js';
import { apiServerCell, ApiOperationsToken, ApiRoutersToken, ApiServerToken, type ApiOperations } from '../../src/cells/api-server/index.js';
import { makeTestPki, writeToken } from '../api-server/tls-fixtures.js';
import { cli } from './fake-agent.js';

const TOKEN = 'cli-test-token-0123456789';

const healthCell = module(
  'test-health',
  'GET /healthz',
  provideInto(
    ApiRoutersToken,
    (ops: ApiOperations) => {
      const r = ops.router();
      ops.serve(r, 'GetHealthz', (_req, res) => res.json({ cilium: { state: 'Ok', msg: 'fine' } }));
      return { name: 'test', router: r };
    },
    ApiOperationsToken,
  ),
);

t.test('cellium -H https:// with client certificate and token', async (t) => {
  const pki = makeTestPki(t);
  const dir = mkdtempSync(join(tmpdir(), 'cellium-cli-tcp-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const tokenFile = writeToken(pki, 'token', `${TOKEN}\n`);
  const h = await testHive(t, [apiServerCell, healthCell], {
    config: {
      'socket-path': join(dir, 'cellium.sock'), 'api-listen-address': '127.0.0.1:0', 'api-tls-cert-file': pki.serverCert, 'api-tls-key-file': pki.serverKey, 'api-tls-client-ca-files': pki.caCert, 'api-token-file': tokenFile,
    },
  });
  const host = `https://${h.get(ApiServerToken).tcpAddress()}`;
  const sock = join(dir, 'unused.sock');
  const certs = ['--tls-ca-cert-files', pki.caCert, '--tls-client-cert-file', pki.clientCert, '--tls-client-key-file', pki.clientKey];

  const ok = await cli(sock, ['-H', host, ...certs, '--token-file', tokenFile, 'status', '-o', 'json']);
  t.equal(ok.code, 0, ok.stderr);
  t.match(ok.stdout, /"Ok"/);

  const noToken = await cli(sock, ['-H', host, ...certs, 'status']);
  t.equal(noToken.code, 1);
  t.match(noToken.stderr, /the TCP API needs authentication: send the agent's token .*--token-file FILE.*\[HTTP 401\]/);

  const wrong = await cli(sock, ['-H', host, ...certs, '--token-file', writeToken(pki, 'wrong', 'not-the-token-of-the-agent'), 'status']);
  t.equal(wrong.code, 1);
  t.match(wrong.stderr, /the bearer token is not the agent's.*\[HTTP 401\]/);

  const noCert = await cli(sock, ['-H', host, '--tls-ca-cert-files', pki.caCert, '--token-file', tokenFile, 'status']);
  t.equal(noCert.code, 1);
  t.match(noCert.stderr, /cannot reach the cellium agent at https:\/\/127\.0\.0\.1:\d+ .*TLS with the agent failed/);

  const rogue = await cli(sock, ['-H', host, '--tls-ca-cert-files', pki.caCert, '--tls-client-cert-file', pki.rogueClientCert, '--tls-client-key-file', pki.rogueClientKey, '--token-file', tokenFile, 'status']);
  t.equal(rogue.code, 1);
  t.match(rogue.stderr, /TLS with the agent failed/);
});

t.test('TLS and token flags without a use are usage errors', async (t) => {
  const sock = '/nonexistent.sock';
  const noHost = await cli(sock, ['--token-file', '/etc/hostname', 'status']);
  t.equal(noHost.code, 2);
  t.match(noHost.stderr, /--token-file is for an agent on TCP: give -H/);
  const plain = await cli(sock, ['-H', 'http://127.0.0.1:9', '--tls-ca-cert-files', '/etc/hostname', 'status']);
  t.equal(plain.code, 2);
  t.match(plain.stderr, /--tls-ca-cert-files needs TLS: give -H https:\/\/HOST:PORT/);
  const half = await cli(sock, ['-H', 'https://127.0.0.1:9', '--tls-client-cert-file', '/etc/hostname', 'status']);
  t.equal(half.code, 2);
  t.match(half.stderr, /go together/);
  const clear = await cli(sock, ['-H', 'http://node1.example:9234', '--token-file', '/etc/hostname', 'status']);
  t.equal(clear.code, 2);
  t.match(clear.stderr, /--token-file over http:\/\/node1\.example:9234 would send the token in clear text: give -H https:\/\/HOST:PORT/);
  const missing = await cli(sock, ['-H', 'http://127.0.0.1:9', '--token-file', '/nonexistent/token', 'status']);
  t.equal(missing.code, 2);
  t.match(missing.stderr, /--token-file \/nonexistent\/token: cannot read it \(ENOENT\)/);
});
