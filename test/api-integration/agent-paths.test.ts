// The whole agent over its socket: healthz, config, identities, IPAM, policy (import, trace,
// selectors, delete), BPF maps and metrics, with every answer validated against the spec.
import t from 'tap';
import { get } from 'node:http';
import { MetricsServerToken } from '../../src/cells/api-metrics/index.js';
import { startAgent, podRequest } from './agent.js';

const POLICY = {
  apiVersion: 'cilium.io/v2',
  kind: 'CiliumNetworkPolicy',
  metadata: { name: 'web-ingress', namespace: 'default' },
  spec: {
    endpointSelector: { matchLabels: { app: 'web' } },
    ingress: [{ fromEndpoints: [{ matchLabels: { app: 'client' } }], toPorts: [{ ports: [{ port: '80', protocol: 'TCP' }] }] }],
  },
};

function scrape(addr: string): Promise<string> {
  return new Promise((resolve, reject) => {
    get(`http://${addr}/metrics`, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve(text));
    }).on('error', reject);
  });
}

t.test('every other path of the agent', async (t) => {
  const a = await startAgent(t, { 'enable-api-rate-limit': false, 'prometheus-serve-addr': '127.0.0.1:0' });
  const ok = async (operationId: string, method: string, path: string, opts: Parameters<typeof a.call>[3] = {}, status = 200) => {
    const res = await a.call(operationId, method, path, opts);
    t.equal(res.status, status, `${method} ${path} -> ${status}`);
    t.same(res.problems, [], `${method} ${path}: answer matches the spec`);
    return res.body as any; // eslint-disable-line @typescript-eslint/no-explicit-any
  };

  const status = await ok('GetHealthz', 'GET', '/healthz');
  t.equal(status.cilium.state, 'Ok', status.cilium.msg);
  t.match(status.cilium.msg, /datapath memory/);
  t.same(status['identity-range'], { 'min-identity': 256, 'max-identity': 65535 });
  t.same(status.ipam.ipv4, ['10.210.0.0/16']);
  t.same(status.ipam.ipv6, ['fd00:210::/112']);
  t.equal(status['cellium-datapath'], 'memory');
  t.notOk(status['bpf-maps'], 'no BPF maps on the memory datapath');
  t.equal(status['cellium-health'].name, 'agent');
  type Node = { name: string; children: Node[] };
  const controlplane = (status['cellium-health'] as Node).children.find((c) => c.name === 'controlplane');
  t.ok(controlplane?.children.some((c) => c.name === 'endpoint'), 'module health in the tree, below its group');
  t.ok(Array.isArray(status.controllers));
  t.same(Object.keys(await ok('GetHealthz', 'GET', '/healthz', { headers: { brief: 'true' } })), ['cilium']);
  t.equal((await a.client.status()).cilium?.state, 'Ok', 'the client reads it too');

  const cfg = await ok('GetConfig', 'GET', '/config');
  t.equal(cfg.spec.options.PolicyAuditMode, 'Disabled');
  await ok('PatchConfig', 'PATCH', '/config', { body: { options: { PolicyAuditMode: 'Enabled' } } });
  t.equal((await a.client.getConfig()).spec?.options?.PolicyAuditMode, 'Enabled');
  const badCfg = await ok('PatchConfig', 'PATCH', '/config', { body: { options: { NoSuchOption: 'Enabled' } } }, 400);
  t.equal(badCfg.error.field, '/body/options/NoSuchOption');
  await ok('PatchConfig', 'PATCH', '/config', { body: { options: { PolicyAuditMode: 'Disabled' } } });

  // endpoints for the identities and the policy
  const web = await ok('PutEndpointID', 'PUT', '/endpoint/0', { body: podRequest(1, { ipv4: '10.210.0.11' }) }, 201);
  const client = await ok('PutEndpointID', 'PUT', '/endpoint/0', { body: podRequest(2, { ipv4: '10.210.0.12' }, { labels: ['k8s:app=client'], 'k8s-pod-name': 'client-2' }) }, 201);

  const ids = await ok('GetIdentity', 'GET', '/identity');
  t.ok(ids.some((i: { id: number }) => i.id === 1), 'reserved:host listed');
  t.ok(ids.some((i: { id: number }) => i.id === web.status.identity.id));
  const one = await ok('GetIdentityID', 'GET', `/identity/${client.status.identity.id}`);
  t.ok(one.labels.includes('k8s:app=client'));
  t.same((await ok('GetIdentity', 'GET', '/identity', { body: ['k8s:app=client'] })).map((i: { id: number }) => i.id), [client.status.identity.id]);
  await ok('GetIdentityID', 'GET', '/identity/4000000', {}, 404);
  await ok('GetIdentityID', 'GET', '/identity/x', {}, 400);
  t.equal((await ok('GetIdentityEndpoints', 'GET', '/identity/endpoints')).length, 2);

  // IPAM
  await ok('PostIpamIP', 'POST', '/ipam/10.210.5.5', { query: { owner: 'default/manual' } });
  await ok('PostIpamIP', 'POST', '/ipam/10.210.5.5', { query: { owner: 'default/other' } }, 409);
  await ok('PostIpamIP', 'POST', '/ipam/10.99.0.1', {}, 400);
  await ok('DeleteIpamIP', 'DELETE', '/ipam/10.210.5.5');
  await ok('DeleteIpamIP', 'DELETE', '/ipam/10.210.5.5', {}, 404);
  const v6 = await ok('PostIpam', 'POST', '/ipam', { query: { family: 'ipv6', owner: 'default/v6' } }, 201);
  t.match(v6.address.ipv6, /^fd00:210::/);
  t.equal(v6['host-addressing'].ipv4['alloc-range'], '10.210.0.0/16');

  // policy
  const put = await ok('PutPolicy', 'PUT', '/policy', { body: JSON.stringify(POLICY) });
  t.ok(put.revision > 1);
  t.equal(JSON.parse(put.policy).length, 1);
  const yaml = 'apiVersion: cilium.io/v2\nkind: CiliumNetworkPolicy\nmetadata: {name: db, namespace: default}\nspec:\n  endpointSelector: {matchLabels: {app: db}}\n  ingress: [{}]\n';
  const put2 = await ok('PutPolicy', 'PUT', '/policy', { body: yaml, contentType: 'application/yaml' });
  t.equal(JSON.parse(put2.policy).length, 2);
  const invalid = await ok('PutPolicy', 'PUT', '/policy', { body: JSON.stringify({ ...POLICY, spec: { ingress: [{ toPorts: [{ ports: [{ port: '99999' }] }] }] } }) }, 400);
  t.match(invalid.error.field, /^\/body\//, `the invalid field is named: ${invalid.error.field}`);
  t.equal(JSON.parse((await ok('GetPolicy', 'GET', '/policy')).policy).length, 2, 'an invalid import changes nothing');
  const trace = await ok('GetCelliumPolicyTrace', 'GET', '/cellium/policy/trace', { query: { src: ['k8s:app=client', 'k8s:io.kubernetes.pod.namespace=default'], dst: ['k8s:app=web', 'k8s:io.kubernetes.pod.namespace=default'], dport: 80 } });
  t.equal(trace.verdict, 'allowed', trace.log.join('\n'));
  const denied = await ok('GetCelliumPolicyTrace', 'GET', '/cellium/policy/trace', { query: { 'src-identity': client.status.identity.id, 'dst-identity': web.status.identity.id, dport: 81 } });
  t.equal(denied.verdict, 'denied');
  t.equal((await a.client.policyTrace({ 'src-identity': client.status.identity.id, 'dst-identity': web.status.identity.id, dport: 80 })).verdict, 'allowed');
  // how far the endpoints realized the import: both endpoints rebuilt with put2's revision (the memory datapath realizes at once)
  let realized = await ok('GetCelliumPolicyRealized', 'GET', '/cellium/policy/realized');
  for (let i = 0; i < 100 && realized.realized < 2; i++) {
    await new Promise((r) => setTimeout(r, 20));
    realized = await ok('GetCelliumPolicyRealized', 'GET', '/cellium/policy/realized');
  }
  t.same(realized, { revision: put2.revision, target: put2.revision, endpoints: 2, realized: 2, 'min-realized-revision': put2.revision, pending: [] }, 'every endpoint realized the current revision');
  const ahead = await ok('GetCelliumPolicyRealized', 'GET', '/cellium/policy/realized', { query: { revision: put2.revision + 1 } });
  t.same(ahead, { ...realized, target: put2.revision + 1, realized: 0, pending: [web.id, client.id].sort((x: number, y: number) => x - y) }, 'a revision not reached yet: both pending');
  t.equal((await a.client.policyRealized(put2.revision)).realized, 2, 'the client reads it too');
  await ok('GetCelliumPolicyRealized', 'GET', '/cellium/policy/realized', { query: { revision: -1 } }, 400);
  const sel = await ok('GetPolicySelectors', 'GET', '/policy/selectors');
  t.ok(sel.length > 0, 'selectors of the imported rules');
  const labelsOfDb = JSON.parse(put2.policy).find((r: { endpointSelector: { matchLabels: Record<string, string> } }) => r.endpointSelector.matchLabels.app === 'db' || r.endpointSelector.matchLabels['any:app'] === 'db')?.labels as string[] | undefined;
  t.ok(labelsOfDb?.length, 'rules carry labels from their resource');
  await ok('GetPolicy', 'GET', '/policy', { body: labelsOfDb });
  const afterDelete = await ok('DeletePolicy', 'DELETE', '/policy', { body: labelsOfDb });
  t.equal(JSON.parse(afterDelete.policy).length, 1);
  await ok('DeletePolicy', 'DELETE', '/policy', { body: labelsOfDb }, 404);
  const cleared = await ok('DeletePolicy', 'DELETE', '/policy');
  t.equal(JSON.parse(cleared.policy).length, 0);

  // maps
  const maps = await ok('GetMap', 'GET', '/map');
  t.ok(maps.maps.length > 0);
  const first = maps.maps[0].path as string;
  const name = first.split('/').pop()!;
  const m = await ok('GetMapName', 'GET', `/map/${name}`);
  t.ok(Array.isArray(m.cache));
  await ok('GetMapName', 'GET', '/map/cellium_nope', {}, 404);

  // errors of the server itself
  const nf = await a.call('-', 'GET', '/no/such/path');
  t.equal(nf.status, 404);
  t.same(nf.problems, [], 'a JSON Error body');
  const na = await a.call('-', 'DELETE', '/healthz');
  t.equal(na.status, 405);
  t.equal(na.headers.allow, 'GET');
  t.same(na.problems, []);

  // metrics over TCP
  const text = await scrape(a.h.get(MetricsServerToken).address()!);
  t.match(text, /^cellium_endpoint 2$/m);
  const states = [...text.matchAll(/^cellium_endpoint_state\{endpoint_state="([a-z-]+)"\} (\d+)$/gm)];
  t.equal(states.reduce((n, m) => n + Number(m[2]), 0), 2, `endpoints by state: ${states.map((m) => `${m[1]}=${m[2]}`).join(' ')}`);
  t.match(text, /^cellium_policy 0$/m);
  t.match(text, /^cellium_policy_change_total\{outcome="success"\} \d+$/m, 'counters fed by the policy repository');
  t.match(text, /^cellium_identity\{type="reserved"\} \d+$/m);
  t.match(text, /^cellium_agent_api_process_time_seconds_count\{path="\/v1\/endpoint\/\{id\}",method="PUT",return_code="201"\} 2$/m);
});
