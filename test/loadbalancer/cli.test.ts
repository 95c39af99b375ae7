// `cellium service ...` against a fake agent that checks every request and answer against the spec.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { Service } from '../../src/api/models.js';
import { cli, startFakeAgent } from '../cli/fake-agent.js';

const tmp = mkdtempSync(join(tmpdir(), 'cellium-lb-cli-'));
t.teardown(() => rmSync(tmp, { recursive: true, force: true }));

const services: Service[] = [
  {
    spec: {
      id: 2, 'frontend-address': { ip: '10.96.0.10', port: 80, protocol: 'tcp', scope: 'external' },
      'backend-addresses': [{ ip: '10.0.1.1', port: 8080, protocol: 'TCP', state: 'active', weight: 100 }, { ip: '10.0.1.2', port: 8080, protocol: 'TCP', state: 'terminating', weight: 100 }],
      flags: { type: 'ClusterIP' },
    },
    status: { 'cellium-state': { state: 'done' } },
  },
  {
    spec: { id: 1, 'frontend-address': { ip: 'fd00::10', port: 53, protocol: 'udp' }, 'backend-addresses': [], flags: { type: 'ClusterIP' } },
    status: { 'cellium-state': { state: 'error', message: 'E2BIG' } },
  },
  {
    spec: { id: 3, 'frontend-address': { ip: '0.0.0.0', port: 30080, protocol: 'tcp' }, 'backend-addresses': [{ ip: '10.0.1.1', port: 8080, protocol: 'TCP', state: 'active', weight: 100 }], flags: { type: 'NodePort' } },
    status: { 'cellium-state': { state: 'done' } },
  },
  {
    spec: { id: 4, 'frontend-address': { ip: '::', port: 30080, protocol: 'tcp' }, 'backend-addresses': [], flags: { type: 'NodePort' } },
    status: { 'cellium-state': { state: 'done' } },
  },
];

t.test('service list: Cilium columns, one backend a line with its state, the status', async (t) => {
  const agent = await startFakeAgent(t, { GetService: { status: 200, body: services } });
  const r = await cli(agent.socketPath, ['service', 'list']);
  t.equal(r.code, 0, r.stderr);
  const lines = r.stdout.split('\n');
  t.match(lines[0], /^ID\s+FRONTEND\s+SERVICE TYPE\s+BACKEND\s+STATUS$/);
  t.match(lines[1], /^1\s+\[fd00::10\]:53\/UDP\s+ClusterIP\s+error: E2BIG$/);
  t.match(lines[2], /^2\s+10\.96\.0\.10:80\/TCP\s+ClusterIP\s+1 => 10\.0\.1\.1:8080\/TCP \(active\)\s+done$/);
  t.match(lines[3], /^\s+2 => 10\.0\.1\.2:8080\/TCP \(terminating\)$/);
  t.match(lines[4], /^3\s+0\.0\.0\.0:30080\/TCP\s+NodePort\s+1 => 10\.0\.1\.1:8080\/TCP \(active\)\s+done$/, 'a node port: the IPv4 surrogate, type NodePort');
  t.match(lines[5], /^4\s+\[::\]:30080\/TCP\s+NodePort\s+done$/, 'the IPv6 surrogate');
  const j = await cli(agent.socketPath, ['-o', 'json', 'service', 'list']);
  t.same(JSON.parse(j.stdout), services);
  t.same(agent.problems, []);
});

t.test('service update sends a ServiceSpec; bad flags are usage errors naming the flag', async (t) => {
  let puts = 0;
  const agent = await startFakeAgent(t, { PutServiceID: () => ({ status: puts++ === 0 ? 201 : 200 }) });
  const r = await cli(agent.socketPath, ['service', 'update', '--id', '5', '--frontend', '10.96.0.20:53', '--backends', '10.0.1.1:5353, 10.0.1.2:5353', '--protocol', 'udp']);
  t.equal(r.code, 0, r.stderr);
  t.equal(r.stdout, 'Created service with ID 5\n');
  t.match(agent.requests('PutServiceID')[0], { path: { id: 5 }, body: { 'frontend-address': { ip: '10.96.0.20', port: 53, protocol: 'udp' }, 'backend-addresses': [{ ip: '10.0.1.1', port: 5353 }, { ip: '10.0.1.2', port: 5353 }] } });
  t.equal((await cli(agent.socketPath, ['service', 'update', '--id', '5', '--frontend', '[fd00::20]:53'])).stdout, 'Updated service with ID 5\n');
  t.equal((await cli(agent.socketPath, ['service', 'update', '--id', '6', '--frontend', '0.0.0.0:30080', '--type', 'NodePort', '--backends', '10.0.1.1:8080'])).code, 0, 'a node port');
  t.match(agent.requests('PutServiceID')[2], { path: { id: 6 }, body: { 'frontend-address': { ip: '0.0.0.0', port: 30080, protocol: 'tcp' }, flags: { type: 'NodePort' } } });
  for (const [args, re] of [
    [['--id', '0', '--frontend', '10.96.0.20:53'], /--id: "0" is not a service ID/],
    [['--id', '5', '--frontend', '10.96.0.20'], /--frontend: "10.96.0.20" is not IP:PORT/],
    [['--id', '5', '--frontend', '10.96.0.20:80', '--backends', '10.0.1.1:99999'], /--backends: "10.0.1.1:99999" is not IP:PORT/],
    [['--id', '5', '--frontend', '10.96.0.20:80', '--backends', '[fd00::1]:80'], /--backends: fd00::1 is not of the frontend's address family/],
    [['--id', '5', '--frontend', '10.96.0.20:80', '--protocol', 'sctp'], /argument 'sctp' is invalid/],
  ] as const) {
    const bad = await cli(agent.socketPath, ['service', 'update', ...args]);
    t.equal(bad.code, 2, args.join(' '));
    t.match(bad.stderr, re);
  }
  t.equal(agent.requests('PutServiceID').length, 3, 'nothing sent for bad flags');
});

t.test('service delete IDs or --all; an unknown ID fails', async (t) => {
  const agent = await startFakeAgent(t, {
    GetService: { status: 200, body: services },
    DeleteServiceID: (req) => (req.path.id === 9 ? { status: 404, body: 'service 9 does not exist' } : { status: 200 }),
  });
  t.equal((await cli(agent.socketPath, ['service', 'delete', '--all'])).stdout, 'Deleted 4 service(s): 2, 1, 3, 4\n');
  const missing = await cli(agent.socketPath, ['service', 'delete', '9']);
  t.equal(missing.code, 1);
  t.match(missing.stderr, /service 9 does not exist/);
  const deletes = agent.requests('DeleteServiceID').length;
  const mixed = await cli(agent.socketPath, ['service', 'delete', '1', '9', '3']);
  t.equal(mixed.code, 1);
  t.match(mixed.stderr, /^cellium: service 9 does not exist \(cellium service list\); nothing was deleted$/m);
  t.equal(agent.requests('DeleteServiceID').length, deletes, 'an unknown ID among known ones: none is deleted');
  t.equal((await cli(agent.socketPath, ['service', 'delete'])).code, 2);
  t.equal((await cli(agent.socketPath, ['service', 'delete', '1', '--all'])).code, 2);
});

t.test('service import sends one file as it is; errors name the file', async (t) => {
  const file = join(tmp, 'web.yaml');
  writeFileSync(file, 'apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {clusterIP: 10.96.0.10, ports: [{port: 80}]}\n');
  const agent = await startFakeAgent(t, {
    PostCelliumServiceImport: (req) => (String(req.body).includes('web')
      ? { status: 200, body: { services: [{ service: 'default/web', frontends: [{ id: 3, address: '10.96.0.10:80/TCP', type: 'ClusterIP' }], backends: 0 }], pending: ['default/db'] } }
      : { status: 400, body: { error: { field: '/body', message: 'document 1 /kind: "apps/v1" "Deployment" is not supported' } } }),
  });
  const r = await cli(agent.socketPath, ['service', 'import', file]);
  t.equal(r.code, 0, r.stderr);
  t.equal(r.stdout, 'default/web: 3 10.96.0.10:80/TCP (0 backends)\ndefault/db: backends kept until its Service is imported\n');
  const bad = join(tmp, 'bad.yaml');
  writeFileSync(bad, 'apiVersion: apps/v1\nkind: Deployment\n');
  const e = await cli(agent.socketPath, ['service', 'import', bad]);
  t.equal(e.code, 1);
  t.match(e.stderr, /bad\.yaml: .*Deployment" is not supported/);
  const none = await cli(agent.socketPath, ['service', 'import', join(tmp, 'nope.yaml')]);
  t.match(none.stderr, /cannot read .*nope\.yaml/);
});
