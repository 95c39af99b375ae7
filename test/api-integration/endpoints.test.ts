// The whole agent over its socket: the seeds' endpoint flow and every endpoint path, with every
// answer validated against the spec.
import t from 'tap';
import { startAgent, podRequest } from './agent.js';

t.test('the seeds flow: allocate, PUT with sync-build-endpoint -> 201 ready, GET by every Cilium prefix, DELETE', async (t) => {
  const a = await startAgent(t, { 'enable-api-rate-limit': false });
  const alloc = await a.call('PostIpam', 'POST', '/ipam', { query: { owner: 'default/web-1' }, headers: { expiration: 'true' } });
  t.equal(alloc.status, 201);
  t.same(alloc.problems, []);
  const addr = (alloc.body as { address: Record<string, string> }).address;
  t.match(addr.ipv4, /^10\.210\./);
  t.match(addr.ipv6, /^fd00:210::/);

  const req = podRequest(1, { ipv4: addr.ipv4, ipv6: addr.ipv6 }, { addressing: { ...addr } });
  const put = await a.call('PutEndpointID', 'PUT', '/endpoint/cilium-local:0', { body: req });
  t.equal(put.status, 201, JSON.stringify(put.body));
  t.same(put.problems, []);
  const ep = put.body as { id: number; status: { state: string; identity: { id: number; labels: string[] }; networking: { addressing: { ipv4?: string }[]; 'interface-name': string; mac: string; 'host-mac': string }; 'external-identifiers': Record<string, string> } };
  t.equal(ep.status.state, 'ready', 'sync-build-endpoint waits for the first regeneration');
  t.ok(ep.status.identity.id >= 256, 'a global identity');
  t.ok(ep.status.identity.labels.includes('k8s:app=web'));
  t.equal(ep.status.networking['interface-name'], 'lxc1');
  t.equal(ep.status.networking.mac, '02:00:00:00:01:01');
  t.equal(ep.status.networking['host-mac'], '02:00:00:00:02:01');
  t.equal(ep.status.networking.addressing[0]!.ipv4, addr.ipv4);
  t.equal(ep.status['external-identifiers']['container-id'], 'c0ffee1');

  const ids = [String(ep.id), `cilium-local:${ep.id}`, 'container-id:c0ffee1', 'pod-name:default%2Fweb-1', `ipv4:${addr.ipv4}`, `ipv6:${encodeURIComponent(addr.ipv6!)}`, 'cni-attachment-id:c0ffee1:eth0'];
  for (const id of ids) {
    const g = await a.call('GetEndpointID', 'GET', `/endpoint/${id}`);
    t.equal(g.status, 200, id);
    t.same(g.problems, [], id);
    t.equal((g.body as { id: number }).id, ep.id, id);
  }
  t.equal((await a.client.getEndpoint(`pod-name:default/web-1`)).id, ep.id, 'the client encodes the pod name');

  const dup = await a.call('PutEndpointID', 'PUT', '/endpoint/cilium-local:0', { body: podRequest(2, { ipv4: addr.ipv4 }) });
  t.equal(dup.status, 409, 'duplicate IP');
  t.same(dup.problems, []);
  t.match(dup.body, new RegExp(addr.ipv4!.replace(/\./g, '\\.')));

  const bad = await a.call('PutEndpointID', 'PUT', '/endpoint/cilium-local:0', { body: podRequest(3, { ipv4: '10.210.0.300' }) });
  t.equal(bad.status, 400);
  t.same(bad.problems, []);
  t.same((bad.body as { error: { field: string } }).error.field, '/body/addressing/ipv4');
  const badLabel = await a.call('PutEndpointID', 'PUT', '/endpoint/cilium-local:0', { body: podRequest(3, { ipv4: '10.210.9.9' }, { labels: ['=bad'] }) });
  t.equal(badLabel.status, 400);
  t.equal((badLabel.body as { error: { field: string } }).error.field, '/body/labels/0', 'a field the manager rejects, named as a pointer');

  const list = await a.call('GetEndpoint', 'GET', '/endpoint');
  t.equal(list.status, 200);
  t.same(list.problems, []);
  t.equal((list.body as unknown[]).length, 1);
  t.equal((await a.call('GetEndpoint', 'GET', '/endpoint', { body: ['k8s:app=nope'] })).status, 404);

  const labels = await a.call('PatchEndpointIDLabels', 'PATCH', `/endpoint/${ep.id}/labels`, { body: { user: ['k8s:tier=frontend'] } });
  t.equal(labels.status, 200);
  const gl = await a.call('GetEndpointIDLabels', 'GET', `/endpoint/${ep.id}/labels`);
  t.same(gl.problems, []);
  t.same((gl.body as { spec: { user: string[] } }).spec.user, ['k8s:tier=frontend']);
  const after = (await a.client.getEndpoint(ep.id)).status!.identity!;
  t.not(after.id, ep.status.identity.id, 'a new identity for the new labels');

  t.equal((await a.call('PatchEndpointIDConfig', 'PATCH', `/endpoint/${ep.id}/config`, { body: { options: { Debug: 'Enabled' } } })).status, 200);
  const cfg = await a.call('GetEndpointIDConfig', 'GET', `/endpoint/${ep.id}/config`);
  t.same(cfg.problems, []);
  t.equal((cfg.body as { realized: { options: Record<string, string> } }).realized.options.Debug, 'Enabled');
  const badCfg = await a.call('PatchEndpointIDConfig', 'PATCH', `/endpoint/${ep.id}/config`, { body: { options: { Debug: 'Sometimes' } } });
  t.equal(badCfg.status, 400);
  t.equal((badCfg.body as { error: { field: string } }).error.field, '/body/options/Debug');

  const patch = await a.call('PatchEndpointID', 'PATCH', `/endpoint/${ep.id}`, { body: { state: 'ready', labels: ['k8s:app=web'] } });
  t.same(patch.problems, []);
  t.equal(patch.status, 200);
  const unknown = await a.call('PatchEndpointID', 'PATCH', '/endpoint/4001', { body: { state: 'ready', labels: ['k8s:app=web'] } });
  t.equal(unknown.status, 404);
  t.same(unknown.problems, []);
  const badPatch = await a.call('PatchEndpointID', 'PATCH', `/endpoint/${ep.id}`, { body: { state: 'sleeping' } });
  t.equal(badPatch.status, 400);
  t.equal((badPatch.body as { error: { field: string } }).error.field, '/body/state');

  const log = await a.call('GetEndpointIDLog', 'GET', `/endpoint/${ep.id}/log`);
  t.same(log.problems, []);
  t.ok((log.body as unknown[]).length > 0);
  const health = await a.call('GetEndpointIDHealthz', 'GET', `/endpoint/${ep.id}/healthz`);
  t.same(health.problems, []);
  t.equal((health.body as { overallHealth: string }).overallHealth, 'OK');

  const ie = await a.call('GetIdentityEndpoints', 'GET', '/identity/endpoints');
  t.same(ie.problems, []);
  t.same((ie.body as { refCount: number }[]).map((x) => x.refCount), [1]);

  t.equal((await a.call('DeleteEndpointID', 'DELETE', `/endpoint/${ep.id}`)).status, 200);
  t.equal((await a.call('GetEndpointID', 'GET', `/endpoint/${ep.id}`)).status, 404);
  const gone = await a.call('DeleteEndpointID', 'DELETE', `/endpoint/${ep.id}`);
  t.equal(gone.status, 404);
  t.same(gone.problems, []);

  // DELETE /endpoint by container id
  const b = await a.call('PostIpam', 'POST', '/ipam', { query: { family: 'ipv4', owner: 'default/web-5' } });
  const ip5 = (b.body as { address: { ipv4: string } }).address.ipv4;
  t.equal((await a.call('PutEndpointID', 'PUT', '/endpoint/0', { body: podRequest(5, { ipv4: ip5 }) })).status, 201);
  t.equal((await a.call('DeleteEndpoint', 'DELETE', '/endpoint', { body: { 'container-id': 'c0ffee5' } })).status, 200);
  t.equal((await a.call('DeleteEndpoint', 'DELETE', '/endpoint', { body: { 'container-id': 'c0ffee5' } })).status, 404);
  t.same(await a.client.listEndpoints(), []);
});

t.test('rate limit: endpoint-create answers 429 with Retry-After over the socket', async (t) => {
  const a = await startAgent(t, { 'api-rate-limit': 'endpoint-create=rate-limit:1/m,rate-burst:1,max-wait-duration:100ms,skip-initial:0,auto-adjust:false' });
  const first = await a.call('PutEndpointID', 'PUT', '/endpoint/0', { body: podRequest(1, { ipv4: '10.210.1.1' }) });
  t.equal(first.status, 201);
  const second = await a.call('PutEndpointID', 'PUT', '/endpoint/0', { body: podRequest(2, { ipv4: '10.210.1.2' }) });
  t.equal(second.status, 429);
  t.equal(second.headers['retry-after'], '60');
  t.same(second.problems, []);
  const err = await a.client.createEndpoint(0, podRequest(3, { ipv4: '10.210.1.3' })).catch((e: unknown) => e);
  t.match(err, { status: 429, retryAfter: 60 }, 'the client reports Retry-After');
  t.equal((await a.call('GetEndpoint', 'GET', '/endpoint')).status, 200, 'other APIs still answer');
});
