// apiRequest, the agent's JSON requests to the apiserver (CiliumEndpoints, CiliumIdentities, CRDs,
// Events): a DELETE's body (DeleteOptions with preconditions) reaches the server whole, and the
// request after it on the same kept-alive connection is not taken for its tail. Found by the
// identity GC test: Node sends a DELETE body neither chunked nor with a length unless told, so the
// preconditions were lost and the next request on the connection got 400 Bad Request.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:https';
import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { apiRequest } from '../../src/cells/k8s/index.js';

t.test('a DELETE with preconditions, then more requests on the same connection', async (t) => {
  const seen: { method: string; url: string; body: string; socket: number }[] = [];
  const sockets = new Map<object, number>();
  // a self-signed certificate for 127.0.0.1 (the kubeconfig's CA): the agent's TLS path, kept alive
  const dir = mkdtempSync(join(tmpdir(), 'cellium-api-request-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-subj', '/CN=127.0.0.1',
    '-addext', 'subjectAltName=IP:127.0.0.1', '-days', '1', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { stdio: 'ignore' });
  const cert = readFileSync(join(dir, 'cert.pem'));
  const server = createServer({ cert, key: readFileSync(join(dir, 'key.pem')) }, (req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (!sockets.has(req.socket)) sockets.set(req.socket, sockets.size);
      seen.push({ method: req.method ?? '', url: req.url ?? '', body: Buffer.concat(chunks).toString('utf8'), socket: sockets.get(req.socket)! });
      res.setHeader('Content-Type', 'application/json');
      res.end(JSON.stringify({ kind: 'Status', message: `${req.method} seen` }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }));
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: `https://127.0.0.1:${(server.address() as AddressInfo).port}`, caData: cert.toString('base64'), skipTLSVerify: false }],
    users: [{ name: 'u' }], contexts: [{ name: 'x', cluster: 'c', user: 'u' }], currentContext: 'x',
  });
  const bounds = { timeoutMs: 5000 };
  const pre = { apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { uid: 'uid-1', resourceVersion: '7' } };
  const answers = [];
  for (let i = 0; i < 3; i++) {
    answers.push(await apiRequest(kc, 'DELETE', `/apis/cilium.io/v2/ciliumidentities/${i}`, pre, bounds));
    answers.push(await apiRequest(kc, 'GET', `/apis/cilium.io/v2/ciliumidentities/${i}`, undefined, bounds));
  }
  t.same(answers.map((a) => a.status), [200, 200, 200, 200, 200, 200], 'every request answered 200 (none taken for the tail of a DELETE)');
  t.same(seen.map((s) => s.method), ['DELETE', 'GET', 'DELETE', 'GET', 'DELETE', 'GET'], 'the server parsed six requests, in order');
  for (const s of seen.filter((x) => x.method === 'DELETE')) t.same(JSON.parse(s.body), pre, `${s.url}: the preconditions arrived whole`);
  t.ok(seen.every((s) => s.method !== 'GET' || s.body === ''), 'the GETs carried no body');
  t.ok(Math.max(...seen.map((s) => s.socket)) < seen.length - 1, 'connections were reused (kept alive)');
});
