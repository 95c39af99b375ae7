import { reservedIdentities } from '../../src/cells/identity/index.js';
import t, { type Test } from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { testHive } from '../../src/hive/index.js';
import { Transport } from '../../src/api/transport.js';
import { createSpecValidator } from '../../src/api/spec.js';
import { apiServerCell } from '../../src/cells/api-server/index.js';
import { apiHandlerCells, DaemonOptionsToken } from '../../src/cells/api-handlers/index.js';
import { agentStatusCell } from '../../src/cells/agent-status/index.js';
import { ipamCell } from '../../src/cells/ipam/index.js';
import { EndpointAPIManagerToken, EndpointManagerToken } from '../../src/cells/endpoint/types.js';
import { IdentityAllocatorToken } from '../../src/cells/identity/types.js';
import { PolicyRepositoryToken } from '../../src/cells/policy/types.js';
import { DatapathToken } from '../../src/datapath/types.js';
import { LBServiceManager, ServiceManagerToken } from '../../src/cells/loadbalancer/index.js';
import { MockEndpoints, MockPolicy, mockDatapath, mockIdentities } from './mocks.js';
import { specCaller } from './spec-call.js';

const validator = createSpecValidator();

interface Res { status: number; body: unknown; headers: Record<string, unknown> }

async function setup(t: Test) {
  const dir = mkdtempSync(join(tmpdir(), 'cellium-handlers-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const socketPath = join(dir, 'cellium.sock');
  const eps = new MockEndpoints();
  const policy = new MockPolicy();
  const h = await testHive(t, [apiServerCell, agentStatusCell, ipamCell, ...apiHandlerCells], {
    config: { 'socket-path': socketPath, 'enable-api-rate-limit': false, 'ipv4-range': '10.200.0.0/24' },
    replace: [[EndpointManagerToken, eps], [EndpointAPIManagerToken, eps], [IdentityAllocatorToken, mockIdentities()], [PolicyRepositoryToken, policy], [DatapathToken, mockDatapath()], [ServiceManagerToken, new LBServiceManager()]],
  });
  const tr = new Transport({ socketPath });
  t.teardown(() => tr.close());
  const call = specCaller(t, tr, validator);
  return { h, eps, policy, call };
}

const field = (r: Res): string => (r.body as { error: { field: string } }).error.field;

t.test('endpoints: create, get by every prefix, labels, config, log, health, list, delete', async (t) => {
  const { eps, call } = await setup(t);
  const req = {
    'container-id': 'c0ffee', 'interface-name': 'lxc1', 'k8s-pod-name': 'web-0', 'k8s-namespace': 'default',
    addressing: { ipv4: '10.200.0.5' }, labels: ['k8s:app=web'], state: 'waiting-for-identity', 'sync-build-endpoint': true,
  };
  const c = await call('PutEndpointID', 'PUT', '/endpoint/101', { body: req });
  t.equal(c.status, 201);
  t.equal((c.body as { id: number }).id, 101, 'the path id is used when the body has none');
  t.equal((c.body as { status: { state: string } }).status.state, 'ready');
  t.equal((await call('PutEndpointID', 'PUT', '/endpoint/7', { body: { ...req, id: 8 } })).status, 400, 'path and body ids differ');
  const dup = await call('PutEndpointID', 'PUT', '/endpoint/0', { body: { ...req, 'container-id': 'other' } });
  t.equal(dup.status, 409);
  t.match(dup.body, /already has 10\.200\.0\.5/);
  const invalid = await call('PutEndpointID', 'PUT', '/endpoint/0', { body: { 'container-id': 'x', state: 'waiting-for-identity' } });
  t.equal(invalid.status, 400);
  t.equal(field(invalid), '/body/addressing', 'the manager\'s field, as a pointer into the body');
  t.equal((await call('PutEndpointID', 'PUT', '/endpoint/0', { body: { ...req, addressing: { ipv4: '10.200.0.9' }, 'container-id': 'fail' } })).status, 500);
  const busy = await call('PutEndpointID', 'PUT', '/endpoint/0', { body: { ...req, addressing: { ipv4: '10.200.0.10' }, 'container-id': 'busy' } });
  t.equal(busy.status, 429);
  t.equal(busy.headers['retry-after'], '1');

  for (const id of ['101', 'cilium-local:101', 'container-id:c0ffee', 'pod-name:default%2Fweb-0', 'ipv4:10.200.0.5', 'cni-attachment-id:c0ffee:eth0']) {
    const g = await call('GetEndpointID', 'GET', `/endpoint/${id}`);
    t.equal(g.status, 200, id);
    t.equal((g.body as { id: number }).id, 101, id);
  }
  t.equal((await call('GetEndpointID', 'GET', '/endpoint/102')).status, 404);
  t.equal((await call('GetEndpointID', 'GET', '/endpoint/ipv4:10.1.1')).status, 400, 'malformed prefixed id');

  t.equal((await call('PatchEndpointIDLabels', 'PATCH', '/endpoint/101/labels', { body: { user: ['k8s:tier=fe'] } })).status, 200);
  const labels = await call('GetEndpointIDLabels', 'GET', '/endpoint/101/labels');
  t.same((labels.body as { spec: { user: string[] } }).spec.user, ['k8s:tier=fe']);
  await call('PatchEndpointIDLabels', 'PATCH', '/endpoint/101/labels', { body: { user: [] } });
  t.same(eps.table.get(101)!.userLabels, [], 'the whole user set is replaced');

  t.equal((await call('PatchEndpointIDConfig', 'PATCH', '/endpoint/101/config', { body: { options: { Debug: 'Enabled' } } })).status, 200);
  const cfg = await call('GetEndpointIDConfig', 'GET', '/endpoint/101/config');
  t.equal((cfg.body as { realized: { options: Record<string, string> } }).realized.options.Debug, 'Enabled');
  const badOpt = await call('PatchEndpointIDConfig', 'PATCH', '/endpoint/101/config', { body: { options: { Nope: 'x' } } });
  t.equal(badOpt.status, 400);
  t.equal(field(badOpt), '/body/options/Nope');

  t.equal((await call('PatchEndpointID', 'PATCH', '/endpoint/101', { body: { state: 'ready' } })).status, 200);
  t.equal((await call('PatchEndpointID', 'PATCH', '/endpoint/999', { body: { state: 'ready' } })).status, 404);
  const noState = await call('PatchEndpointID', 'PATCH', '/endpoint/101', { body: { labels: ['k8s:app=web'] } });
  t.equal(field(noState), '/body/state', 'a PATCH without state is refused too, as in Cilium (same model)');
  const badPatch = await call('PatchEndpointID', 'PATCH', '/endpoint/101', { body: { state: 'ready', addressing: { ipv4: '10.200.0.77' } } });
  t.equal(field(badPatch), '/body/addressing/ipv4');

  const log = await call('GetEndpointIDLog', 'GET', '/endpoint/101/log');
  t.ok((log.body as unknown[]).length >= 1);
  t.same((await call('GetEndpointIDHealthz', 'GET', '/endpoint/101/healthz')).body, { bpf: 'OK', policy: 'OK', connected: true, overallHealth: 'OK' });

  await call('PutEndpointID', 'PUT', '/endpoint/0', { body: { ...req, addressing: { ipv4: '10.200.0.6' }, labels: ['k8s:app=db'] } });
  t.equal(((await call('GetEndpoint', 'GET', '/endpoint')).body as unknown[]).length, 2);
  t.equal(((await call('GetEndpoint', 'GET', '/endpoint', { body: ['k8s:app=db'] })).body as unknown[]).length, 1);
  t.equal(((await call('GetEndpoint', 'GET', '/endpoint', { body: ['app=web'] })).body as unknown[]).length, 1, 'no source matches any source');
  t.equal((await call('GetEndpoint', 'GET', '/endpoint', { body: ['k8s:app=nope'] })).status, 404);

  t.equal((await call('DeleteEndpointID', 'DELETE', '/endpoint/101')).status, 200);
  t.equal((await call('DeleteEndpointID', 'DELETE', '/endpoint/101')).status, 404);
  t.equal((await call('DeleteEndpoint', 'DELETE', '/endpoint', { body: { 'container-id': 'c0ffee' } })).status, 200, 'the second endpoint of the container');
  t.equal((await call('DeleteEndpoint', 'DELETE', '/endpoint', { body: { 'container-id': 'c0ffee' } })).status, 404);
  t.equal(eps.table.size, 0);
});

t.test('identities', async (t) => {
  const { eps, call } = await setup(t);
  const all = await call('GetIdentity', 'GET', '/identity');
  t.same((all.body as { id: number }[]).map((i) => i.id), [...reservedIdentities.keys(), 357, 358].sort((a, b) => a - b), 'the reserved identities and the two globals');
  t.same(((await call('GetIdentity', 'GET', '/identity', { body: ['k8s:app=b'] })).body as { id: number }[]).map((i) => i.id), [358]);
  t.equal((await call('GetIdentity', 'GET', '/identity', { body: ['k8s:app=zzz'] })).status, 404);
  t.equal(((await call('GetIdentityID', 'GET', '/identity/2')).body as { labels: string[] }).labels[0], 'reserved:world');
  t.equal((await call('GetIdentityID', 'GET', '/identity/4000')).status, 404);
  t.equal((await call('GetIdentityID', 'GET', '/identity/abc')).status, 400);
  await eps.createEndpoint({}, { id: 101, addressing: { ipv4: '10.200.0.5' } });
  const used = await call('GetIdentityEndpoints', 'GET', '/identity/endpoints');
  t.same(used.body, [{ identity: { id: 357, labels: ['k8s:app=a', 'k8s:io.kubernetes.pod.namespace=default'], labelsSHA256: (used.body as { identity: { labelsSHA256: string } }[])[0]!.identity.labelsSHA256 }, refCount: 1 }]);
});

t.test('IPAM: allocate next, a given IP, release; errors map to 409/404/400/501', async (t) => {
  const { call } = await setup(t);
  const next = await call('PostIpam', 'POST', '/ipam', { query: { owner: 'default/web-0' }, headers: { expiration: 'true' } });
  t.equal(next.status, 201);
  const b = next.body as { address: { ipv4: string; 'ipv4-expiration-uuid'?: string }; ipv4: { gateway: string; cidrs: string[] }; 'host-addressing': { ipv4: { enabled: boolean } } };
  t.match(b.address.ipv4, /^10\.200\.0\.\d+$/);
  t.ok(b.address['ipv4-expiration-uuid'], 'expiring allocation');
  t.equal(b.ipv4.gateway, '10.200.0.1');
  t.same(b.ipv4.cidrs, ['10.200.0.0/24']);
  t.equal((await call('PostIpam', 'POST', '/ipam', { query: { family: 'ipv6' } })).status, 502, 'no IPv6 pool');
  t.equal((await call('PostIpam', 'POST', '/ipam', { query: { family: 'ipx' } })).status, 400);
  t.equal((await call('PostIpam', 'POST', '/ipam', { query: { pool: 'other' } })).status, 400);
  t.equal((await call('PostIpamIP', 'POST', '/ipam/10.200.0.50', { query: { owner: 'x' } })).status, 200);
  t.equal((await call('PostIpamIP', 'POST', '/ipam/10.200.0.50')).status, 409, 'in use (owner defaults to "api")');
  t.equal((await call('PostIpamIP', 'POST', '/ipam/10.99.0.1')).status, 400, 'outside the pool');
  t.equal((await call('PostIpamIP', 'POST', '/ipam/fd00::5')).status, 501, 'no IPv6 pool');
  t.equal((await call('PostIpamIP', 'POST', '/ipam/not-an-ip')).status, 400);
  t.equal((await call('DeleteIpamIP', 'DELETE', '/ipam/10.200.0.50')).status, 200);
  t.equal((await call('DeleteIpamIP', 'DELETE', '/ipam/10.200.0.50')).status, 404);
});

t.test('policy: import (JSON string, YAML text), get, replace-with-labels, delete, selectors, trace', async (t) => {
  const { policy, call } = await setup(t);
  const rules = [{ endpointSelector: { matchLabels: { app: 'a' } }, labels: ['k8s:policy=one'] }];
  const put = await call('PutPolicy', 'PUT', '/policy', { body: JSON.stringify(rules) });
  t.equal(put.status, 200);
  t.same(JSON.parse((put.body as { policy: string }).policy), rules);
  const bad = await call('PutPolicy', 'PUT', '/policy', { body: JSON.stringify([{ labels: ['x:y'] }]) });
  t.equal(bad.status, 400);
  t.equal(field(bad), '/body/0/endpointSelector', 'the field inside the policy text');
  const rev = policy.revision;
  const refused = await call('PutPolicy', 'PUT', '/policy', { body: 'not json', query: { 'replace-with-labels': ['k8s:policy=one'] } });
  t.equal(refused.status, 400);
  t.equal(policy.rules.length, 1, 'a refused import with replace-with-labels keeps the old rules');
  t.ok(policy.revision >= rev);
  const two = [{ endpointSelector: {}, labels: ['k8s:policy=two'] }];
  await call('PutPolicy', 'PUT', '/policy', { body: JSON.stringify(two), query: { 'replace-with-labels': ['k8s:policy=one'] } });
  t.same(policy.rules.map((r) => r.labels), [['k8s:policy=two']]);
  t.equal((await call('GetPolicy', 'GET', '/policy', { body: ['k8s:policy=two'] })).status, 200);
  t.equal((await call('GetPolicy', 'GET', '/policy', { body: ['k8s:policy=one'] })).status, 404);
  t.equal((await call('DeletePolicy', 'DELETE', '/policy', { body: ['k8s:policy=one'] })).status, 404);
  t.equal((await call('DeletePolicy', 'DELETE', '/policy', { body: ['k8s:policy=two'] })).status, 200);
  t.equal(policy.rules.length, 0);
  await call('PutPolicy', 'PUT', '/policy', { body: JSON.stringify(rules) });
  t.equal((await call('DeletePolicy', 'DELETE', '/policy')).status, 200, 'no labels: every rule');
  t.equal(policy.rules.length, 0);
  const sel = await call('GetPolicySelectors', 'GET', '/policy/selectors');
  t.same((sel.body as { identities: number[] }[])[0]!.identities, [357]);
  const trace = await call('GetCelliumPolicyTrace', 'GET', '/cellium/policy/trace', { query: { src: ['k8s:app=a'], 'dst-identity': 358, dport: 80 } });
  t.equal((trace.body as { verdict: string }).verdict, 'allowed');
  const both = await call('GetCelliumPolicyTrace', 'GET', '/cellium/policy/trace', { query: { src: ['k8s:app=a'], 'src-identity': 357, 'dst-identity': 358, dport: 80 } });
  t.equal(field(both), '/query/src-identity');
  const none = await call('GetCelliumPolicyTrace', 'GET', '/cellium/policy/trace', { query: { 'dst-identity': 358, dport: 80 } });
  t.equal(field(none), '/query/src');
  const unknown = await call('GetCelliumPolicyTrace', 'GET', '/cellium/policy/trace', { query: { 'src-identity': 999, 'dst-identity': 358, dport: 80 } });
  t.equal(field(unknown), '/query/src-identity');
});

t.test('maps', async (t) => {
  const { call } = await setup(t);
  const list = await call('GetMap', 'GET', '/map');
  t.same((list.body as { maps: { path: string }[] }).maps.map((m) => m.path), ['cellium_lxc', 'cellium_ipcache']);
  const one = await call('GetMapName', 'GET', '/map/cellium_ipcache');
  t.same((one.body as { cache: unknown[] }).cache, [{ key: '0.0.0.0/0', value: 'identity=2', 'desired-action': 'insert', 'last-error': 'ENOSPC' }]);
  t.equal((await call('GetMapName', 'GET', '/map/nope')).status, 404);
  t.equal((await call('GetMapName', 'GET', '/map/bad%20name')).status, 400);
});

t.test('config: GET shows the mutable options; PATCH changes them and regenerates', async (t) => {
  const { h, eps, call } = await setup(t);
  const g = await call('GetConfig', 'GET', '/config');
  t.equal((g.body as { spec: { options: Record<string, string> } }).spec.options.PolicyAuditMode, 'Disabled');
  t.equal((await call('PatchConfig', 'PATCH', '/config', { body: { options: { PolicyAuditMode: 'true' }, 'policy-enforcement': 'always' } })).status, 200);
  t.equal(h.get(DaemonOptionsToken).current().options.PolicyAuditMode, 'Enabled', 'true normalized to Enabled');
  t.equal(h.get(DaemonOptionsToken).current().policyEnforcement, 'always');
  t.equal(eps.regenerateAllCalls, 1);
  await call('PatchConfig', 'PATCH', '/config', { body: { options: { PolicyAuditMode: 'Enabled' } } });
  t.equal(eps.regenerateAllCalls, 1, 'no change, no regeneration');
  const bad = await call('PatchConfig', 'PATCH', '/config', { body: { options: { Nope: 'Enabled' } } });
  t.equal(field(bad), '/body/options/Nope');
  const badValue = await call('PatchConfig', 'PATCH', '/config', { body: { options: { Debug: 'maybe' } } });
  t.equal(field(badValue), '/body/options/Debug');
  t.equal((await call('PatchConfig', 'PATCH', '/config', { body: { 'policy-enforcement': 'sometimes' } })).status, 400);
});

t.test('healthz: StatusResponse with state, controllers, health tree, IPAM, identity range, maps; brief', async (t) => {
  const { call } = await setup(t);
  const s = await call('GetHealthz', 'GET', '/healthz');
  const b = s.body as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
  t.equal(b.cilium.state, 'Ok');
  t.match(b.cilium.msg, /cellium .* \(datapath memory\)/);
  t.same(b['identity-range'], { 'min-identity': 256, 'max-identity': 65535 });
  t.same(b.ipam.ipv4, ['10.200.0.0/24']);
  t.equal(b['cellium-datapath'], 'memory');
  t.notOk(b['bpf-maps'], 'the memory datapath has no BPF maps (GET /map lists its tables)');
  t.equal(b['cellium-health'].name, 'agent');
  t.ok(Array.isArray(b.controllers));
  const brief = await call('GetHealthz', 'GET', '/healthz', { headers: { brief: 'true' } });
  t.same(Object.keys(brief.body as object), ['cilium']);
});
