// The typed client: every method sends a request the spec accepts and returns the answer's model;
// errors carry the server's message, field and Retry-After. Also the default socket path.
import t from 'tap';
import { CelliumClient } from '../../src/api/client.js';
import { AgentUnreachableError, ApiError } from '../../src/api/errors.js';
import { defaultSocketPath, ROOT_SOCKET_PATH, startAgentHint } from '../../src/api/socket-path.js';
import { loadApiSpec } from '../../src/api/spec.js';
import { startFakeAgent } from '../cli/fake-agent.js';
import * as fx from './fixtures.js';

t.test('every operation through the client', async (t) => {
  const agent = await startFakeAgent(t, fx.cannedReplies());
  const c = new CelliumClient({ socketPath: agent.socketPath });
  t.teardown(() => c.close());
  t.same(await c.status(), fx.statusResponse);
  t.same(await c.getConfig(), fx.daemonConfig);
  await c.patchConfig({ options: { Debug: 'Enabled' } });
  t.same(await c.listEndpoints(['k8s:app=web']), [fx.endpoint12, fx.endpoint13]);
  t.same(await c.deleteEndpointsByContainer('3f6c'), { errors: 1 });
  t.same(await c.getEndpoint('pod-name:default/web-0'), fx.endpoint12);
  t.same(await c.createEndpoint('cilium-local:0', { 'container-id': '3f6c', addressing: { ipv4: '10.200.0.12' }, state: 'waiting-for-identity', 'sync-build-endpoint': true }), fx.endpoint12);
  await c.patchEndpoint(12, { labels: ['k8s:app=web'], state: 'ready' });
  t.same(await c.deleteEndpoint('ipv4:10.200.0.12'), { errors: 2 });
  t.same(await c.getEndpointConfig(12), fx.endpointConfig);
  await c.patchEndpointConfig(12, { options: { Debug: 'Enabled' } });
  t.same(await c.getEndpointLabels(12), fx.endpointLabels);
  await c.setEndpointLabels(12, ['app:a=b']);
  t.same(await c.getEndpointLog(12), fx.endpointLog);
  t.same(await c.getEndpointHealth(12), fx.endpointHealth);
  t.same(await c.listIdentities(), fx.identities);
  t.same(await c.getIdentity(31245), fx.identities[1]);
  t.same(await c.identityEndpoints(), fx.identityEndpoints);
  t.same(await c.ipam({ family: 'ipv6' }), fx.ipamView);
  t.same(await c.clusterNodes(), fx.clusterNodes);
  t.same(await c.ipList({ cidr: '10.1.0.0/16' }), fx.ipList);
  t.same(await c.nodeIds(), fx.nodeIds);
  t.same(await c.ipamAllocate({ family: 'ipv4', owner: 'x', expiration: true }), fx.ipamResponse);
  await c.ipamAllocateIP('fd00::7', { owner: 'x' });
  await c.ipamRelease('fd00::7');
  t.same(await c.getPolicy(), fx.policy);
  t.same(await c.putPolicy('[]', { replaceWithLabels: ['k8s:a=b', 'k8s:c=d'] }), fx.policy);
  t.same(await c.deletePolicy('all'), fx.policy);
  t.same(await c.policySelectors(), fx.selectors);
  t.same(await c.policyRealized(9), { revision: 9, target: 9, endpoints: 3, realized: 2, 'min-realized-revision': 8, pending: [12] }, 'how many endpoints realized revision 9');
  t.same(agent.requests('GetCelliumPolicyRealized')[0]?.query, { revision: '9' }, 'the revision goes as a query parameter');
  t.same(await c.policyTrace({ src: ['k8s:a=b'], 'dst-identity': 1, dport: 80, proto: 'TCP' }), fx.traceAllowed);
  t.same(await c.explainFlow({ flow: { verdict: 'DROPPED' }, format: 'k8s' }), fx.explanation);
  t.same(await c.listServices(), [fx.service7]);
  t.same(await c.getService(7), fx.service7);
  t.equal(await c.putService(7, fx.service7.spec!), true, '201: created');
  await c.deleteService(7);
  t.same(await c.importServices('apiVersion: v1\nkind: Service\n'), fx.serviceImport);
  t.same(await c.listMaps(), fx.mapList);
  t.same(await c.getMap('cellium_lxc'), fx.mapLxc);
  const records: unknown[] = [];
  await c.monitor({ type: ['drop'], 'related-to': [12] }, (r) => void records.push(r));
  t.same(records, [{ kind: 'info', message: 'Listening for events (types drop, endpoints 12). Press Ctrl-C to quit' }], 'the monitor stream, a record a line (the last one without a newline too)');

  t.same(agent.received.filter((r) => r.rejected), [], 'the spec accepted every request');
  t.same(agent.problems, []);
  const seen = new Set(agent.received.map((r) => r.operationId));
  const all = loadApiSpec().operations.map((o) => o.operationId).filter((id) => id !== 'PostCelliumCni');
  t.same(all.filter((id) => !seen.has(id)), [], 'every operation but the CNI shim’s was exercised');
  t.same(agent.requests('PutPolicy')[0]?.query, { 'replace-with-labels': ['k8s:a=b', 'k8s:c=d'] });
  t.same(agent.requests('PostIpam')[0]?.headers, { expiration: true });
  t.same(agent.requests('DeletePolicy')[0]?.body, [], 'all: an empty label list, as Cilium');
});

t.test('errors: message, field, Retry-After; unreachable agents', async (t) => {
  const agent = await startFakeAgent(t, {
    PutEndpointID: { status: 409, body: 'endpoint with IPv4 10.200.0.12 already exists' },
    GetEndpointID: { status: 429, body: 'rate limited', headers: { 'Retry-After': '2' } },
  });
  const c = new CelliumClient({ socketPath: agent.socketPath });
  t.teardown(() => c.close());
  await t.rejects(c.createEndpoint(0, { state: 'waiting-for-identity' }), new ApiError(409, 'endpoint with IPv4 10.200.0.12 already exists'));
  const limited = await c.getEndpoint(1).catch((e: ApiError) => e);
  t.match(limited, { status: 429, message: 'rate limited', retryAfter: 2 });
  const invalid = await c.createEndpoint(0, { mac: 'nope', state: 'waiting-for-identity' }).catch((e: ApiError) => e);
  t.match(invalid, { status: 400, field: '/body/mac', message: '/body/mac must be a MAC address such as 02:00:00:00:00:0c' });
  const gone = new CelliumClient({ socketPath: '/nonexistent/cellium.sock' });
  const err = await gone.status().catch((e: AgentUnreachableError) => e);
  t.type(err, AgentUnreachableError);
  t.match(err, { target: 'unix socket /nonexistent/cellium.sock', code: 'ENOENT', hint: /cellium-agent --socket-path \/nonexistent\/cellium\.sock/ });
  gone.close();
});

t.test('an aborted request rejects with the abort, not as unreachable', async (t) => {
  const agent = await startFakeAgent(t, { GetHealthz: { status: 200, body: fx.statusResponse } });
  const c = new CelliumClient({ socketPath: agent.socketPath });
  t.teardown(() => c.close());
  const ac = new AbortController();
  ac.abort();
  await t.rejects(c.transport.request('GET', '/healthz', { signal: ac.signal }), { name: 'AbortError' });
});

t.test('an agent that does not answer in time is a ProtocolError, not "unreachable"', async (t) => {
  const { createServer } = await import('node:http');
  const { mkdtempSync, rmSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const dir = mkdtempSync(join(tmpdir(), 'cellium-client-'));
  const server = createServer(() => undefined);
  await new Promise<void>((r) => server.listen(join(dir, 'hung.sock'), r));
  t.teardown(() => {
    server.closeAllConnections();
    server.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const c = new CelliumClient({ socketPath: join(dir, 'hung.sock') }, { timeoutMs: 100 });
  t.teardown(() => c.close());
  await t.rejects(c.status(), { name: 'ProtocolError', message: /GET \/v1\/healthz: no answer from the agent at unix socket .*hung\.sock within 100 ms/ });
});

t.test('default socket path: env override, root, XDG_RUNTIME_DIR, /tmp/cellium-<uid>', async (t) => {
  t.equal(defaultSocketPath({ uid: 0, env: {} }), ROOT_SOCKET_PATH);
  t.equal(defaultSocketPath({ uid: 1000, env: { XDG_RUNTIME_DIR: '/run/user/1000' } }), '/run/user/1000/cellium/cellium.sock');
  t.equal(defaultSocketPath({ uid: 1000, env: {}, cwd: '/home/u/work' }), '/tmp/cellium-1000/cellium.sock');
  t.equal(defaultSocketPath({ uid: 0, env: { CELLIUM_SOCK: 'x/agent.sock' }, cwd: '/srv' }), '/srv/x/agent.sock');
  t.equal(startAgentHint(ROOT_SOCKET_PATH, { uid: 0, env: {} }), 'start the agent with `cellium-agent`');
  t.equal(startAgentHint(ROOT_SOCKET_PATH, { uid: 1000, env: {} }), 'start the agent with `sudo cellium-agent --socket-path /var/run/cellium/cellium.sock`');
  t.equal(startAgentHint('/tmp/a.sock', { uid: 0, env: {} }), 'start the agent with `cellium-agent --socket-path /tmp/a.sock`');
});
