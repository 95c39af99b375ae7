// The CLI's changing commands against a fake agent: what they send, what they print, --wait progress.
import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Endpoint } from '../../src/api/models.js';
import * as fx from '../api-spec/fixtures.js';
import { cli, startFakeAgent } from './fake-agent.js';

const tmp = mkdtempSync(join(tmpdir(), 'cellium-cli-files-'));
t.teardown(() => rmSync(tmp, { recursive: true, force: true }));

/** The endpoint as it regenerates: regenerating first, then ready with a fresh log entry. */
function regenerating(n: number): Endpoint {
  const now = new Date(Date.now() + 1000).toISOString();
  if (n < 2) return { ...fx.endpoint12, status: { ...fx.endpoint12.status, state: 'regenerating', log: [] } };
  return { ...fx.endpoint12, status: { ...fx.endpoint12.status, state: 'ready', log: [{ timestamp: now, code: 'ok', message: 'Completed endpoint regeneration', state: 'ready' }] } };
}

t.test('endpoint labels --add/--delete sets the user labels, --wait waits for regeneration', async (t) => {
  const agent = await startFakeAgent(t, {
    GetEndpointIDLabels: { status: 200, body: fx.endpointLabels },
    PatchEndpointIDLabels: { status: 200 },
    GetEndpointID: (_req, n) => ({ status: 200, body: regenerating(n) }),
  });
  const r = await cli(agent.socketPath, ['endpoint', 'labels', 'container-id:3f6c0e2d9a', '--add', 'app:team=blue', '-a', 'app:x=1', '--delete', 'app:tier=front', '--wait']);
  t.equal(r.code, 0, r.stderr);
  t.same(agent.requests('PatchEndpointIDLabels').map((q) => [q.path.id, q.body]), [['container-id:3f6c0e2d9a', { user: ['app:team=blue', 'app:x=1'] }]]);
  t.match(r.stderr, /^waiting for endpoint container-id:3f6c0e2d9a to regenerate: regenerating$/m);
  t.match(r.stderr, /^endpoint container-id:3f6c0e2d9a regenerated$/m);
  t.match(r.stdout, /^user\s+app:tier=front$/m, 'prints the labels afterwards');
  const same = await cli(agent.socketPath, ['endpoint', 'labels', '12', '--add', 'app:tier=front', '--wait']);
  t.equal(same.code, 0);
  t.equal(same.stderr, 'endpoint 12: user labels unchanged\n');
  t.equal(agent.requests('PatchEndpointIDLabels').length, 1, 'no PATCH and no wait when nothing changes');
  t.same(agent.problems, []);
});

t.test('endpoint config KEY=VALUE patches options; a failed regeneration fails --wait', async (t) => {
  const agent = await startFakeAgent(t, {
    PatchEndpointIDConfig: { status: 200 },
    GetEndpointIDConfig: { status: 200, body: fx.endpointConfig },
    GetEndpointID: {
      status: 200,
      body: { ...fx.endpoint12, status: { ...fx.endpoint12.status, state: 'not-ready', log: [{ timestamp: new Date(Date.now() + 60_000).toISOString(), code: 'failed', message: 'loading program: invalid argument', state: 'not-ready' }] } },
    },
  });
  const ok = await cli(agent.socketPath, ['endpoint', 'config', '12', 'Debug=Enabled', 'PolicyAuditMode=Enabled']);
  t.equal(ok.code, 0);
  t.same(agent.requests('PatchEndpointIDConfig')[0]?.body, { options: { Debug: 'Enabled', PolicyAuditMode: 'Enabled' } });
  const failed = await cli(agent.socketPath, ['endpoint', 'config', '12', 'Debug=Disabled', '--wait']);
  t.equal(failed.code, 1);
  t.equal(failed.stderr, 'cellium: endpoint 12 failed to regenerate: loading program: invalid argument\n');
  const bad = await cli(agent.socketPath, ['endpoint', 'config', '12', 'Debug']);
  t.equal(bad.code, 2);
  t.match(bad.stderr, /invalid setting "Debug": expected KEY=VALUE/);
});

t.test('endpoint delete: by ids, by container, 206 error counts; an unknown id among several deletes none', async (t) => {
  const agent = await startFakeAgent(t, {
    DeleteEndpointID: (req) => (req.path.id === '13' ? { status: 206, body: 2 } : { status: 200 }),
    DeleteEndpoint: { status: 200 },
    GetEndpointID: (req) => (['12', '13'].includes(String(req.path.id)) ? { status: 200, body: fx.endpoint12 } : { status: 404, body: `endpoint ${String(req.path.id)} not found` }),
  });
  const mixed = await cli(agent.socketPath, ['endpoint', 'delete', '12', '99', '13']);
  t.equal(mixed.code, 1);
  t.equal(mixed.stderr, 'cellium: endpoint 99 not found; nothing was deleted\n');
  t.equal(agent.requests('DeleteEndpointID').length, 0, 'none deleted');
  const r = await cli(agent.socketPath, ['endpoint', 'delete', '12', '13', '--container-id', '3f6c0e2d9a']);
  t.equal(r.code, 0);
  t.equal(r.stdout, 'Endpoint container-id:3f6c0e2d9a deleted\nEndpoint 12 deleted\nEndpoint 13 deleted with 2 errors\n');
  t.same(agent.requests('DeleteEndpoint')[0]?.body, { 'container-id': '3f6c0e2d9a' });
  const j = await cli(agent.socketPath, ['endpoint', 'delete', '13', '-o', 'json']);
  t.same(JSON.parse(j.stdout), [{ id: '13', errors: 2 }]);
  const none = await cli(agent.socketPath, ['endpoint', 'delete']);
  t.equal(none.code, 2);
  t.equal(none.stderr, 'cellium: give endpoint ids or --container-id\n');
});

t.test('policy import: several files are one import (one List, one revision), --wait for it; one file is sent as it is', async (t) => {
  const files = ['a.yaml', 'b.json', 'c.yaml'].map((f, i) => {
    const path = join(tmp, f);
    writeFileSync(path, f.endsWith('json') ? '[{"endpointSelector":{}}]' : `apiVersion: cilium.io/v2\nkind: CiliumNetworkPolicy\nmetadata: {name: p${i}}\nspec: {endpointSelector: {}}\n`);
    return path;
  });
  let revision = 4;
  const agent = await startFakeAgent(t, {
    PutPolicy: () => ({ status: 200, body: { revision: ++revision, policy: '[]' } }),
    GetCelliumPolicyRealized: (_req, n) => ({ status: 200, body: { revision: 5, target: 5, endpoints: 2, realized: n < 2 ? 1 : 2, 'min-realized-revision': n < 2 ? 4 : 5, pending: n < 2 ? [12] : [] } }),
  });
  const r = await cli(agent.socketPath, ['policy', 'import', ...files, '--wait']);
  t.equal(r.code, 0, r.stderr);
  t.equal(r.stdout, 'Revision: 5\n');
  const sent = agent.requests('PutPolicy');
  t.same(sent.map((q) => [q.contentType, typeof q.body]), [['application/json', 'string']], 'one request');
  t.same(JSON.parse(String(sent[0]?.body)), {
    apiVersion: 'v1', kind: 'List',
    items: [
      { apiVersion: 'cilium.io/v2', kind: 'CiliumNetworkPolicy', metadata: { name: 'p0' }, spec: { endpointSelector: {} } },
      [{ endpointSelector: {} }],
      { apiVersion: 'cilium.io/v2', kind: 'CiliumNetworkPolicy', metadata: { name: 'p2' }, spec: { endpointSelector: {} } },
    ],
  }, 'the documents of every file, in order');
  t.match(r.stderr, /^waiting for policy revision 5: 1\/2 endpoints$/m);
  t.match(r.stderr, /^waiting for policy revision 5: 2\/2 endpoints$/m);
  t.same(agent.requests('GetCelliumPolicyRealized').map((q) => q.query), [{ revision: 5 }, { revision: 5 }], 'asked how many realized revision 5, not for every endpoint');
  t.equal(agent.requests('GetEndpoint').length, 0);
  const j = await cli(agent.socketPath, ['policy', 'import', files[0]!, '-o', 'json']);
  t.same(JSON.parse(j.stdout), { imported: [{ file: files[0], revision: 6 }], revision: 6 });
  t.match(agent.requests('PutPolicy')[1]?.body, /^apiVersion: cilium.io\/v2\nkind: CiliumNetworkPolicy/, 'one file: its text as it is');
  const missing = await cli(agent.socketPath, ['policy', 'import', files[0]!, join(tmp, 'nope.yaml')]);
  t.equal(missing.code, 1);
  t.match(missing.stderr, /^cellium: cannot read .*nope\.yaml: ENOENT.*; nothing was imported/);
  t.equal(agent.requests('PutPolicy').length, 2, 'a file that cannot be read: nothing sent');
});

t.test('policy import of several files: one rejected refuses them all, the error names its file', async (t) => {
  const good = join(tmp, 'good.json');
  const bad = join(tmp, 'bad.json');
  const broken = join(tmp, 'broken.yaml');
  writeFileSync(good, '[]');
  writeFileSync(bad, '[{"endpointSelector": 5}]');
  writeFileSync(broken, 'a: [\n');
  const agent = await startFakeAgent(t, {
    PutPolicy: (req) => (String(req.body).includes('5') ? { status: 400, body: 'invalid policy at /items/1/0/endpointSelector: must be object' } : { status: 200, body: fx.policy }),
  });
  const r = await cli(agent.socketPath, ['policy', 'import', good, bad, good]);
  t.equal(r.code, 1);
  t.equal(agent.requests('PutPolicy').length, 1, 'one request for the three files');
  t.match(r.stderr, new RegExp(`^cellium: invalid policy at ${bad} /0/endpointSelector: must be object \\[HTTP 400\\]$`, 'm'));
  const unparsable = await cli(agent.socketPath, ['policy', 'import', good, broken]);
  t.equal(unparsable.code, 1);
  t.match(unparsable.stderr, new RegExp(`^cellium: ${broken}: document 1: .*: not YAML or JSON`, 'm'));
  t.equal(agent.requests('PutPolicy').length, 1, 'a file that does not parse: nothing sent');
});

t.test('policy delete: labels, --all, neither', async (t) => {
  const agent = await startFakeAgent(t, { DeletePolicy: { status: 200, body: { revision: 9, policy: '[]' } } });
  t.equal((await cli(agent.socketPath, ['policy', 'delete', 'k8s:policy=allow-web'])).stdout, 'Revision: 9\n');
  t.equal((await cli(agent.socketPath, ['policy', 'delete', '--all'])).code, 0);
  t.same(agent.requests('DeletePolicy').map((q) => q.body), [['k8s:policy=allow-web'], []]);
  const neither = await cli(agent.socketPath, ['policy', 'delete']);
  t.equal(neither.code, 2);
  t.match(neither.stderr, /--all/);
  const both = await cli(agent.socketPath, ['policy', 'delete', '--all', 'k8s:x=y']);
  t.equal(both.code, 2);
});

t.test('policy delete --wait waits until every endpoint realized the new revision (an agent without /cellium/policy/realized: by GET /endpoint)', async (t) => {
  const realized = (rev: number): Endpoint => ({ ...fx.endpoint12, status: { ...fx.endpoint12.status, policy: { realized: { 'policy-revision': rev } } } });
  const agent = await startFakeAgent(t, {
    DeletePolicy: { status: 200, body: { revision: 9, policy: '[]' } },
    GetCelliumPolicyRealized: { status: 404, body: 'no such path' },
    GetEndpoint: (_req, n) => ({ status: 200, body: [realized(n < 2 ? 8 : 9)] }),
  });
  const r = await cli(agent.socketPath, ['policy', 'delete', '--all', '--wait']);
  t.equal(r.code, 0, r.stderr);
  t.equal(r.stdout, 'Revision: 9\n');
  t.match(r.stderr, /^waiting for policy revision 9: 0\/1 endpoints$/m);
  t.match(r.stderr, /^waiting for policy revision 9: 1\/1 endpoints$/m);
  t.equal(agent.requests('GetEndpoint').length, 2, 'polled until the revision was realized');
});

t.test('policy trace: --dport 80/TCP, labels or identities', async (t) => {
  const agent = await startFakeAgent(t, { GetCelliumPolicyTrace: { status: 200, body: fx.traceAllowed } });
  const r = await cli(agent.socketPath, ['policy', 'trace', '--src', 'k8s:app=client', '--dst', 'k8s:app=web', '--dst', 'k8s:env=prod', '--dport', '80/TCP']);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /^Verdict:\s+ALLOWED$/m);
  t.match(r.stdout, /^Ingress \(destination\):\s+ALLOWED\s+by k8s:policy=allow-web$/m);
  t.match(r.stdout, /^Egress \(source\):\s+ALLOWED \(not enforced\)$/m);
  t.match(r.stdout, /^Final verdict: ALLOWED$/m);
  t.same(agent.requests('GetCelliumPolicyTrace')[0]?.query, { src: ['k8s:app=client'], dst: ['k8s:app=web', 'k8s:env=prod'], dport: 80, proto: 'TCP' });
  await cli(agent.socketPath, ['policy', 'trace', '-s', '31245', '-d', '1', '--dport', '53/udp']);
  t.same(agent.requests('GetCelliumPolicyTrace')[1]?.query, { 'src-identity': 31245, 'dst-identity': 1, dport: 53, proto: 'UDP' });
  await cli(agent.socketPath, ['policy', 'trace', '-s', 'a:x,a:y', '-d', '1']);
  t.same(agent.requests('GetCelliumPolicyTrace')[2]?.query, { src: ['a:x', 'a:y'], 'dst-identity': 1, dport: 0, proto: 'ANY' });
  for (const [dport, why] of [['80/XTP', /invalid protocol "XTP"/], ['70000', /port 0-65535/], ['http', /expected PORT or PORT\/PROTOCOL/]] as const) {
    const bad = await cli(agent.socketPath, ['policy', 'trace', '-s', '1', '-d', '2', '--dport', dport]);
    t.equal(bad.code, 2, dport);
    t.match(bad.stderr, why);
  }
  const mixed = await cli(agent.socketPath, ['policy', 'trace', '-s', '1', '-s', 'k8s:a=b', '-d', '2']);
  t.match(mixed.stderr, /either one numeric identity or labels/);
  const missing = await cli(agent.socketPath, ['policy', 'trace', '--dst', '1']);
  t.equal(missing.code, 2);
  t.match(missing.stderr, /required option '-s, --src/);
  t.equal(agent.requests('GetCelliumPolicyTrace').length, 3, 'bad arguments send nothing');
});

t.test('config KEY=VALUE, ipam allocate/release', async (t) => {
  const agent = await startFakeAgent(t, {
    PatchConfig: { status: 200 },
    GetConfig: { status: 200, body: fx.daemonConfig },
    PostIpam: { status: 201, body: fx.ipamResponse },
    PostIpamIP: { status: 200 },
    DeleteIpamIP: { status: 200 },
  });
  const c = await cli(agent.socketPath, ['config', 'Debug=Enabled', 'PolicyEnforcement=always']);
  t.equal(c.stdout, 'Configuration updated: Debug=Enabled PolicyEnforcement=always\n');
  t.same(agent.requests('PatchConfig')[0]?.body, { options: { Debug: 'Enabled' }, 'policy-enforcement': 'always' });
  const j = await cli(agent.socketPath, ['config', 'Debug=Disabled', '-o', 'json']);
  t.same(JSON.parse(j.stdout), fx.daemonConfig, 'json prints the configuration after the change');
  const bad = await cli(agent.socketPath, ['config', 'PolicyEnforcement=sometimes']);
  t.equal(bad.code, 2);
  t.match(bad.stderr, /expected one of default, always, never/);
  const a = await cli(agent.socketPath, ['ipam', 'allocate', '--family', 'ipv4', '--expiration']);
  t.match(a.stdout, /^IPv4:\s+10\.200\.0\.14 \(gateway 10\.200\.0\.1\)$/m);
  t.match(a.stdout, /^Expiration UUID:\s+6a1c3e0e/m);
  t.match(agent.requests('PostIpam')[0], { query: { family: 'ipv4', owner: 'cellium-cli' }, headers: { expiration: true } });
  t.equal((await cli(agent.socketPath, ['ipam', 'allocate', '10.200.0.50', '--owner', 'me'])).stdout, 'Allocated 10.200.0.50 to me\n');
  t.equal((await cli(agent.socketPath, ['ipam', 'release', '10.200.0.50'])).stdout, 'Released 10.200.0.50\n');
  t.same(agent.requests('DeleteIpamIP')[0]?.path, { ip: '10.200.0.50' });
  t.same(agent.received.filter((r) => r.rejected), []);
  t.same(agent.problems, []);
});
