// Cellium's API mounted in someone else's express app (docs/examples/embedding/api-mount.ts, through
// the package exports): the handlers answer under the app's prefix, with the API's validation,
// errors and limits, and the app's own routes and 404s stay the app's.
import t from 'tap';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const built = existsSync(join(import.meta.dirname, '../../dist/src/cells/api-server/index.js'));
const skip = built ? false : 'dist/ not built: run npm run build (npm test builds it)';

interface Answer { status: number; type: string; allow: string | null; body: unknown }

async function call(url: string, method = 'GET', body?: string, contentType = 'application/json'): Promise<Answer> {
  const res = await fetch(url, { method, ...(body !== undefined ? { body, headers: { 'content-type': contentType } } : {}) });
  const text = await res.text();
  const type = res.headers.get('content-type') ?? '';
  return { status: res.status, type, allow: res.headers.get('allow'), body: type.includes('json') && text ? JSON.parse(text) : text };
}

t.test('the API router mounted under /cellium in a fresh express app', { skip }, async (t) => {
  const { startAppWithCelliumApi } = await import('../../docs/examples/embedding/api-mount.js');
  const dir = mkdtempSync(join(tmpdir(), 'cellium-embed-api-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const app = await startAppWithCelliumApi({ range: '192.168.78.0/28', stateDir: join(dir, 'state'), maxBodyBytes: 4096 });
  t.teardown(() => app.stop());
  const api = `${app.url}/cellium/v1`;

  const ip = await call(`${api}/ipam?owner=my-tool`, 'POST');
  t.equal(ip.status, 201, 'POST /ipam served under the prefix');
  t.match(ip.body, { address: { ipv4: /^192\.168\.78\.\d+$/ } });
  t.match((await call(`${api}/ipam`)).body, { addresses: [{ owner: 'my-tool' }] }, 'GET /ipam lists it');

  const rules = JSON.stringify([{ endpointSelector: { matchLabels: { app: 'web' } }, labels: ['k8s:tool=embed'] }]);
  t.equal((await call(`${api}/policy`, 'PUT', JSON.stringify(rules))).status, 200, 'PUT /policy with the JSON string Cilium sends');
  const policy = await call(`${api}/policy`);
  t.match(JSON.parse((policy.body as { policy: string }).policy), [{ labels: ['k8s:tool=embed'] }]);

  const invalid = await call(`${api}/ipam/not-an-ip`, 'POST');
  t.equal(invalid.status, 400);
  t.match(invalid.body, { error: { field: '/path/ip' } }, 'the spec validates requests here too');
  const missing = await call(`${api}/nothing`);
  t.equal(missing.status, 404);
  t.equal(missing.body, 'no such API path: GET /cellium/v1/nothing', 'unknown API paths answer in Cilium\'s Error shape, naming the full path');
  const method = await call(`${api}/ipam`, 'DELETE');
  t.equal(method.status, 405);
  t.equal(method.allow, 'GET, POST');
  const unserved = await call(`${api}/healthz`);
  t.equal(unserved.status, 501, 'an operation whose cell the app did not include');
  t.match(unserved.body, /GetHealthz is not served/);
  const tooLarge = await call(`${api}/policy`, 'PUT', JSON.stringify('x'.repeat(8192)));
  t.equal(tooLarge.status, 413, '--api-max-body-bytes of the app\'s hive');
  const broken = await call(`${api}/policy`, 'PUT', '{"not": json');
  t.match(broken, { status: 400, body: { error: { field: '/body' } } });

  t.same((await call(`${app.url}/own`)).body, { mine: true }, 'the app\'s own route');
  const elsewhere = await call(`${app.url}/elsewhere`);
  t.equal(elsewhere.status, 404);
  t.match(elsewhere.type, /text\/html/, 'paths outside the mount get the app\'s own 404, not the API\'s');
});
