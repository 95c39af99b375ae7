import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { Transport } from '../../src/api/transport.js';
import { createSpecValidator } from '../../src/api/spec.js';
import { apiServerCell } from '../../src/cells/api-server/index.js';
import { agentStatusCell } from '../../src/cells/agent-status/index.js';
import { serviceHandlersCell } from '../../src/cells/api-handlers/index.js';
import { ServiceManagerToken, apiserverServiceKey, loadBalancerCell } from '../../src/cells/loadbalancer/index.js';
import { statedirCell } from '../../src/cells/statedir/index.js';
import { ipamCell } from '../../src/cells/ipam/index.js';
import { DatapathToken } from '../../src/datapath/types.js';
import { LBMapsToken } from '../../src/datapath/lb-maps.js';
import { HealthTreeToken, testHive, type HealthNode } from '../../src/hive/index.js';
import { config } from '../../src/hive/cell.js';
import { BpfDatapathConfigToken, bpfDatapathConfigSchema } from '../../src/cells/datapath-bpf/index.js';
import { mockDatapath } from '../api-server/mocks.js';
import { cli } from '../cli/fake-agent.js';
import { specCaller } from '../api-server/spec-call.js';
import { readFileSync, writeFileSync } from 'node:fs';

const validator = createSpecValidator();

async function agent(t: Test, dir: string) {
  const socketPath = join(dir, `cellium-${Math.random().toString(36).slice(2)}.sock`);
  const h = await testHive(t, [statedirCell, config(BpfDatapathConfigToken, bpfDatapathConfigSchema), apiServerCell, agentStatusCell, ipamCell, loadBalancerCell, serviceHandlersCell], {
    config: { 'socket-path': socketPath, 'state-dir': join(dir, 'state'), 'enable-api-rate-limit': false },
    replace: [[DatapathToken, mockDatapath()]],
  });
  const tr = new Transport({ socketPath });
  t.teardown(() => tr.close());
  const call = specCaller(t, tr, validator);
  return Object.assign(call, { health: () => h.get(HealthTreeToken).snapshot(), socketPath, lbMaps: () => h.get(LBMapsToken), mgr: () => h.get(ServiceManagerToken) });
}

function tempDir(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'cellium-lb-api-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const spec = (ip: string, port: number, backends: string[], extra: Record<string, unknown> = {}) => ({
  'frontend-address': { ip, port, protocol: 'tcp' },
  'backend-addresses': backends.map((b) => ({ ip: b, port: 8080 })),
  flags: { type: 'ClusterIP', name: 'web', namespace: 'default' },
  ...extra,
});

t.test('PUT, GET, list and DELETE /service/{id}', async (t) => {
  const call = await agent(t, tempDir(t));
  t.equal((await call('PutServiceID', 'PUT', '/service/3', { body: spec('10.96.0.10', 80, ['10.0.1.2', '10.0.1.1']) })).status, 201);
  t.equal((await call('PutServiceID', 'PUT', '/service/3', { body: spec('10.96.0.10', 80, ['10.0.1.1']) })).status, 200);
  const got = await call('GetServiceID', 'GET', '/service/3');
  t.match(got.body, {
    spec: { id: 3, 'frontend-address': { ip: '10.96.0.10', port: 80, protocol: 'tcp' }, 'backend-addresses': [{ ip: '10.0.1.1', port: 8080, state: 'active', weight: 100 }], flags: { type: 'ClusterIP', name: 'web', namespace: 'default' } },
  });
  let state = '';
  for (let i = 0; i < 50 && state !== 'done'; i++) {
    state = ((await call('GetServiceID', 'GET', '/service/3')).body as { status: { 'cellium-state': { state: string } } }).status['cellium-state'].state;
    if (state !== 'done') await new Promise((r) => setTimeout(r, 20));
  }
  t.equal(state, 'done', 'the frontend was reconciled into the (memory) LB maps');
  t.match((await call('GetServiceID', 'GET', '/service/3')).body, { status: { realized: { id: 3 } } });
  const find = (n: HealthNode, name: string): HealthNode | undefined => (n.name === name ? n : n.children?.map((c) => find(c, name)).find(Boolean));
  let lbHealth: HealthNode | undefined;
  for (let i = 0; i < 80 && !/1 frontends: 1 done/.test(lbHealth?.message ?? ''); i++) {
    lbHealth = find(call.health(), 'loadbalancer');
    if (!/1 frontends: 1 done/.test(lbHealth?.message ?? '')) await new Promise((r) => setTimeout(r, 100));
  }
  t.match(lbHealth?.message, /1 frontends: 1 done, 0 pending, 0 failing/, 'the health tree reports the frontends');
  const list = await call('GetService', 'GET', '/service');
  t.equal((list.body as unknown[]).length, 1);
  t.equal((await call('DeleteServiceID', 'DELETE', '/service/3')).status, 200);
  t.equal((await call('DeleteServiceID', 'DELETE', '/service/3')).status, 404);
  t.equal((await call('GetServiceID', 'GET', '/service/3')).status, 404);
});

t.test('a Service of the apiserver: listed, but PUT and DELETE of its frontend are a 400 naming it and kubectl', async (t) => {
  const call = await agent(t, tempDir(t));
  const [fe] = call.mgr().upsert({
    service: { key: apiserverServiceKey('shop', 'web'), name: 'web', namespace: 'shop', source: 'apiserver', sessionAffinity: false, sessionAffinityTimeoutSec: 0, extTrafficPolicy: 'Cluster', intTrafficPolicy: 'Cluster', sourceRanges: [] },
    frontends: [{ address: { ip: '10.96.0.10', port: 80, protocol: 'tcp', scope: 'external' }, type: 'ClusterIP' }],
    backends: [],
  });
  t.match((await call('GetServiceID', 'GET', `/service/${fe!.id}`)).body, { spec: { flags: { name: 'web', namespace: 'shop' } } });
  for (const r of [
    await call('PutServiceID', 'PUT', `/service/${fe!.id}`, { body: spec('10.96.0.11', 80, ['10.0.1.1']) }),
    await call('DeleteServiceID', 'DELETE', `/service/${fe!.id}`),
  ]) {
    t.equal(r.status, 400);
    t.match(JSON.stringify(r.body), /is a frontend of the Kubernetes Service shop\/web, which the agent keeps as the apiserver has it; fix: change or delete the Service in Kubernetes \(kubectl edit\|delete service -n shop web\)/);
  }
  t.equal((await call('PutServiceID', 'PUT', '/service/999', { body: spec('10.96.0.10', 80, ['10.0.1.1']) })).status, 460, 'its address is not for another ID either');
  t.ok(call.mgr().service(apiserverServiceKey('shop', 'web')), 'still there');
});

t.test('bad ServiceSpecs: 400 naming the field, 460 frontend, 461 backend', async (t) => {
  const call = await agent(t, tempDir(t));
  const noFe = await call('PutServiceID', 'PUT', '/service/1', { body: { 'backend-addresses': [] } });
  t.equal(noFe.status, 400);
  t.match(noFe.body, { error: { field: '/body/frontend-address' } });
  const unknown = await call('PutServiceID', 'PUT', '/service/1', { body: { ...spec('10.96.0.10', 80, []), frontend: 1 } });
  t.equal(unknown.status, 400);
  const badId = await call('PutServiceID', 'PUT', '/service/0', { body: spec('10.96.0.10', 80, []) });
  t.match(badId.body, { error: { field: '/path/id' } });
  const badState = await call('PutServiceID', 'PUT', '/service/1', { body: { ...spec('10.96.0.10', 80, []), 'backend-addresses': [{ ip: '10.0.1.1', state: 'sleeping' }] } });
  t.match(badState.body, { error: { field: '/body/backend-addresses/0/state' } });
  const feIp = await call('PutServiceID', 'PUT', '/service/1', { body: spec('10.96.0.300', 80, []) });
  t.equal(feIp.status, 460);
  t.match(feIp.body, /\/body\/frontend-address\/ip: "10.96.0.300" is not an IP address; fix: /);
  const fePort = await call('PutServiceID', 'PUT', '/service/1', { body: spec('10.96.0.10', 0, []) });
  t.equal(fePort.status, 460);
  const beIp = await call('PutServiceID', 'PUT', '/service/1', { body: spec('10.96.0.10', 80, ['10.0.1.1', 'nope']) });
  t.equal(beIp.status, 461);
  t.match(beIp.body, /\/body\/backend-addresses\/1\/ip/);
  const family = await call('PutServiceID', 'PUT', '/service/1', { body: spec('10.96.0.10', 80, ['fd00::1']) });
  t.equal(family.status, 461);
  t.match(family.body, /backend-addresses\/0\/ip: fd00::1 is not of the frontend's address family/);
  const otherId = await call('PutServiceID', 'PUT', '/service/1', { body: { ...spec('10.96.0.10', 80, []), id: 2 } });
  t.equal(otherId.status, 400, 'a body ID other than the path\'s is refused');
  t.match(otherId.body, { error: { field: '/body/id', message: /^2 is not the service ID of the path \(1\); fix: / } });
  const udpBackend = await call('PutServiceID', 'PUT', '/service/1', { body: { ...spec('10.96.0.10', 80, []), 'backend-addresses': [{ ip: '10.0.1.1', port: 80, protocol: 'UDP' }] } });
  t.equal(udpBackend.status, 461, 'a UDP backend of a TCP frontend is refused');
  t.match(udpBackend.body, /\/body\/backend-addresses\/0\/protocol: UDP is not the frontend's protocol \(TCP\); fix: /);
  t.equal((await call('GetServiceID', 'GET', '/service/1')).status, 404, 'nothing was created by the refused specs');
  const anyBackend = await call('PutServiceID', 'PUT', '/service/1', { body: { ...spec('10.96.0.10', 80, []), 'backend-addresses': [{ ip: '10.0.1.1', port: 80, protocol: 'ANY' }] } });
  t.equal(anyBackend.status, 201, 'a backend of protocol ANY takes the frontend\'s');
  t.match((await call('GetServiceID', 'GET', '/service/1')).body, { spec: { 'backend-addresses': [{ ip: '10.0.1.1', protocol: 'TCP' }] } });
  t.equal((await call('DeleteServiceID', 'DELETE', '/service/1')).status, 200);
  // addresses that would take over the node's own connections, or that nothing can answer
  for (const ip of ['127.0.0.1', '0.0.0.0', '224.0.0.251', '255.255.255.255']) {
    const r = await call('PutServiceID', 'PUT', '/service/1', { body: spec(ip, 80, ['10.0.1.1']) });
    t.equal(r.status, 460, `frontend ${ip}: 460`);
    t.match(r.body, new RegExp(`/body/frontend-address/ip: ${ip.replace(/\./g, '\\.')} cannot be a service frontend of type ClusterIP: it is .*; fix: `));
  }
  for (const ip of ['::1', '::', 'ff02::1']) t.equal((await call('PutServiceID', 'PUT', '/service/1', { body: spec(ip, 80, ['fd00::1']) })).status, 460, `frontend ${ip}: 460`);
  for (const ip of ['0.0.0.0', '239.1.1.1', '255.255.255.255']) {
    const r = await call('PutServiceID', 'PUT', '/service/1', { body: spec('10.96.0.10', 80, ['10.0.1.1', ip]) });
    t.equal(r.status, 461, `backend ${ip}: 461`);
    t.match(r.body, /\/body\/backend-addresses\/1\/ip: .* cannot be a backend: it is /);
  }
  // the unspecified address is NodePort's surrogate (this port on every address of the node): only for type NodePort
  for (const type of ['ClusterIP', 'ExternalIPs', 'LoadBalancer', 'HostPort']) {
    const r = await call('PutServiceID', 'PUT', '/service/1', { body: { ...spec('0.0.0.0', 30080, ['10.0.1.1']), flags: { type } } });
    t.equal(r.status, 460, `type ${type} on 0.0.0.0: 460`);
    t.match(r.body, new RegExp(`cannot be a service frontend of type ${type}: it is an unspecified .*; fix: .*or give it type NodePort`));
  }
  const np6Bad = await call('PutServiceID', 'PUT', '/service/1', { body: { ...spec('::', 30080, ['fd00::1']), flags: { type: 'ClusterIP' } } });
  t.equal(np6Bad.status, 460, 'type ClusterIP on ::: 460');
  const np0 = await call('PutServiceID', 'PUT', '/service/1', { body: { ...spec('0.0.0.1', 30080, ['10.0.1.1']), flags: { type: 'NodePort' } } });
  t.equal(np0.status, 460, 'NodePort on 0.0.0.1 (this network, not the surrogate): 460');
  const np = await call('PutServiceID', 'PUT', '/service/5', { body: { ...spec('0.0.0.0', 30080, ['10.0.1.1']), flags: { type: 'NodePort', name: 'np' } } });
  t.equal(np.status, 201, 'NodePort on 0.0.0.0:30080: created');
  const ssh = await call('PutServiceID', 'PUT', '/service/7', { body: { ...spec('0.0.0.0', 22, ['10.0.1.1']), flags: { type: 'NodePort', name: 'ssh' } } });
  t.equal(ssh.status, 460, 'a node port outside --node-port-range (22 would take every host process\'s connect to the node\'s port 22): 460');
  t.match(ssh.body, /\/body\/frontend-address\/port: node port 22 is outside --node-port-range 30000-32767; fix: /);
  t.match((await call('GetServiceID', 'GET', '/service/5')).body, { spec: { 'frontend-address': { ip: '0.0.0.0', port: 30080 }, flags: { type: 'NodePort' } } });
  t.equal((await call('PutServiceID', 'PUT', '/service/6', { body: { ...spec('::', 30080, ['fd00::1']), flags: { type: 'NodePort', name: 'np' } } })).status, 201, 'NodePort on [::]:30080: created');
  t.equal((await call('DeleteServiceID', 'DELETE', '/service/5')).status, 200);
  t.equal((await call('DeleteServiceID', 'DELETE', '/service/6')).status, 200);
  t.equal((await call('PutServiceID', 'PUT', '/service/1', { body: spec('169.254.20.10', 53, ['127.0.0.1']) })).status, 201, 'a link-local frontend (node-local DNS) with a loopback backend is fine');
  t.equal((await call('DeleteServiceID', 'DELETE', '/service/1')).status, 200);
  t.equal((await call('PutServiceID', 'PUT', '/service/1', { body: spec('10.96.0.10', 80, []) })).status, 201);
  const taken = await call('PutServiceID', 'PUT', '/service/2', { body: spec('10.96.0.10', 80, []) });
  t.equal(taken.status, 460);
  t.match(taken.body, /already the frontend of service 1/);
  const upd = await call('PutServiceID', 'PUT', '/service/2', { body: { ...spec('10.96.0.11', 80, []), updateServices: true } });
  t.equal(upd.status, 400);
  t.match(upd.body, { error: { field: '/body/updateServices' } });
  t.equal(((await call('GetService', 'GET', '/service')).body as unknown[]).length, 1, 'nothing bad was applied');
});

const MANIFEST = `
apiVersion: v1
kind: Service
metadata: { name: web, namespace: shop }
spec:
  clusterIP: 10.96.1.10
  sessionAffinity: ClientIP
  ports:
  - { name: http, port: 80, targetPort: web, protocol: TCP }
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: web-abc
  namespace: shop
  labels: { kubernetes.io/service-name: web }
addressType: IPv4
ports: [{ name: http, port: 8080, protocol: TCP }]
endpoints:
- addresses: [10.0.2.1]
  conditions: { ready: true }
- addresses: [10.0.2.2]
  conditions: { ready: false, serving: true, terminating: true }
`;

t.test('POST /cellium/service/import; services survive a restart with their IDs', async (t) => {
  const dir = tempDir(t);
  {
    const call = await agent(t, dir);
    await call('PutServiceID', 'PUT', '/service/9', { body: spec('10.96.0.10', 80, ['10.0.1.1']) });
    const imp = await call('PostCelliumServiceImport', 'POST', '/cellium/service/import', { body: MANIFEST });
    t.equal(imp.status, 200);
    t.match(imp.body, { services: [{ service: 'shop/web', frontends: [{ address: '10.96.1.10:80/TCP', type: 'ClusterIP' }], backends: 2 }], pending: [] });
    const bad = await call('PostCelliumServiceImport', 'POST', '/cellium/service/import', { body: 'apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {clusterIP: 10.96.1.11, ports: [{port: 99999}]}\n' });
    t.equal(bad.status, 400);
    t.match(bad.body, { error: { message: /document 1 \/spec\/ports\/0\/port: 99999 is not a port; fix: / } });
  }
  const before = JSON.stringify(((await (await agent(t, dir))('GetService', 'GET', '/service')).body as { spec: unknown }[]).map((s) => s.spec));
  t.match(before, /"id":9,/);
  t.match(before, /"state":"terminating"/);
  t.equal(JSON.parse(before).length, 2, 'both services are back after a restart');
});

t.test('the CLI against the agent: import a manifest, list until done, delete', async (t) => {
  const dir = tempDir(t);
  const call = await agent(t, dir);
  const file = join(dir, 'web.yaml');
  writeFileSync(file, MANIFEST);
  const imp = await cli(call.socketPath, ['service', 'import', file]);
  t.equal(imp.code, 0, imp.stderr);
  t.match(imp.stdout, /^shop\/web: 1 10\.96\.1\.10:80\/TCP \(2 backends\)$/m);
  let list = '';
  for (let i = 0; i < 50 && !/\bdone$/m.test(list); i++) {
    list = (await cli(call.socketPath, ['service', 'list'])).stdout;
    if (!/\bdone$/m.test(list)) await new Promise((r) => setTimeout(r, 20));
  }
  t.match(list, /^1\s+10\.96\.1\.10:80\/TCP\s+ClusterIP\s+1 => 10\.0\.2\.1:8080\/TCP \(active\)\s+done$/m);
  t.match(list, /^\s+2 => 10\.0\.2\.2:8080\/TCP \(terminating\)$/m);
  const bad = await cli(call.socketPath, ['service', 'update', '--id', '2', '--frontend', '10.96.1.10:80', '--backends', '10.0.2.9:80']);
  t.equal(bad.code, 1, 'the frontend belongs to service 1');
  t.match(bad.stderr, /already the frontend of service 1/);
  t.equal((await cli(call.socketPath, ['service', 'delete', '--all'])).stdout, 'Deleted 1 service(s): 1\n');
  t.equal((await cli(call.socketPath, ['service', 'list'])).stdout.trim().split('\n').length, 1, 'only the header is left');
});

// Issue 22, point 4: a colliding import answers 460 and leaves nothing behind: not in the service
// list, not in services.json, not in the LB maps, not after a restart.
t.test('a colliding import leaves nothing behind, across a restart too', async (t) => {
  const dir = tempDir(t);
  const store = join(dir, 'state', 'services.json');
  const svc = (name: string, ip: string) => `apiVersion: v1\nkind: Service\nmetadata: {name: ${name}, namespace: shop}\nspec: {clusterIP: ${ip}, ports: [{port: 80}]}\n`;
  const vips = (call: Awaited<ReturnType<typeof agent>>) => [...new Set(call.lbMaps().services4.entries().map(([k]) => k.address))].sort();
  const listed = async (call: Awaited<ReturnType<typeof agent>>) => ((await call('GetService', 'GET', '/service')).body as { spec: { 'frontend-address': { ip: string } } }[]).map((s) => s.spec['frontend-address'].ip).sort();
  const done = async (call: Awaited<ReturnType<typeof agent>>, n: number) => {
    for (let i = 0; i < 100 && vips(call).length !== n; i++) await new Promise((r) => setTimeout(r, 20));
  };
  {
    const call = await agent(t, dir);
    t.equal((await call('PostCelliumServiceImport', 'POST', '/cellium/service/import', { body: svc('old', '10.96.7.1') })).status, 200);
    await done(call, 1);
    const stored = readFileSync(store, 'utf8');
    const same = await call('PostCelliumServiceImport', 'POST', '/cellium/service/import', { body: `${svc('a', '10.96.7.2')}---\n${svc('b', '10.96.7.2')}` });
    t.equal(same.status, 460, 'two Services of the import on one clusterIP:port');
    t.match(same.body, /10\.96\.7\.2:80\/TCP is already a frontend of shop\/a, also in this import/);
    const beside = await call('PostCelliumServiceImport', 'POST', '/cellium/service/import', { body: `${svc('new', '10.96.7.3')}---\n${svc('thief', '10.96.7.1')}` });
    t.equal(beside.status, 460, 'a new Service beside one that collides with an existing service');
    t.match(beside.body, /service shop\/thief \/frontends\/0\/address: 10\.96\.7\.1:80\/TCP is already a frontend of shop\/old/);
    t.same(await listed(call), ['10.96.7.1'], 'the list holds the old service only');
    t.equal(readFileSync(store, 'utf8'), stored, 'services.json is unchanged');
    // a later good import is reconciled: had anything of the refused ones been applied, it would be in the maps by then
    t.equal((await call('PutServiceID', 'PUT', '/service/50', { body: spec('10.96.7.4', 80, ['10.0.1.1']) })).status, 201);
    await done(call, 2);
    t.same(vips(call), ['10.96.7.1', '10.96.7.4'], 'the LB maps hold the old service and the later one only');
  }
  const call = await agent(t, dir);
  t.same(await listed(call), ['10.96.7.1', '10.96.7.4'], 'after a restart: the same services');
  await done(call, 2);
  t.same(vips(call), ['10.96.7.1', '10.96.7.4']);
});

t.test('cellium service import of several files is one import: a collision in the last file applies none', async (t) => {
  const dir = tempDir(t);
  const call = await agent(t, dir);
  const files = [
    ['a.yaml', 'apiVersion: v1\nkind: Service\nmetadata: {name: a, namespace: shop}\nspec: {clusterIP: 10.96.8.1, ports: [{port: 80}]}\n'],
    ['b.json', JSON.stringify({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'b', namespace: 'shop' }, spec: { clusterIP: '10.96.8.2', ports: [{ port: 80 }] } })],
    ['c.yaml', 'apiVersion: v1\nkind: Service\nmetadata: {name: c, namespace: shop}\nspec: {clusterIP: 10.96.8.3, ports: [{port: 80}]}\n---\napiVersion: v1\nkind: Service\nmetadata: {name: d, namespace: shop}\nspec: {clusterIP: 10.96.8.1, ports: [{port: 80}]}\n'],
    ['e.yaml', 'apiVersion: v1\nkind: Service\nmetadata: {name: e, namespace: shop}\nspec: {clusterIP: 10.96.8.5, ports: [{port: 99999}]}\n'],
  ].map(([name, text]) => {
    writeFileSync(join(dir, name!), text!);
    return join(dir, name!);
  });
  const collide = await cli(call.socketPath, ['service', 'import', ...files.slice(0, 3)]);
  t.equal(collide.code, 1);
  t.match(collide.stderr, /service shop\/d \/frontends\/0\/address: 10\.96\.8\.1:80\/TCP is already a frontend of shop\/a, also in this import.*\[HTTP 460\]/);
  t.same((await call('GetService', 'GET', '/service')).body, [], 'none of the files applied');
  const bad = await cli(call.socketPath, ['service', 'import', files[0]!, files[3]!]);
  t.equal(bad.code, 1);
  t.match(bad.stderr, new RegExp(`cellium: ${files[3]!.replace(/[.]/g, '\\.')} /spec/ports/0/port: 99999 is not a port`), 'the error names the file');
  t.same((await call('GetService', 'GET', '/service')).body, []);
  const ok = await cli(call.socketPath, ['service', 'import', ...files.slice(0, 2)]);
  t.equal(ok.code, 0, ok.stderr);
  t.equal(((await call('GetService', 'GET', '/service')).body as unknown[]).length, 2);
});
