// The agent's API against hostile input (issue 22, point 6), every answer checked against the spec:
// ids that are not plain decimal integers (1e3, 0x10, " 12", +12, 12.0, 012) are 400 and create
// nothing; YAML alias bombs and deep nesting in imports are 400, not 500; a JSON key given twice
// is 400 (JSON.parse would keep the last); Cilium's TCP/UDP/ANY protocols are taken.
import t from 'tap';
import { podRequest, startAgent } from './agent.js';

const svc = (ip: string, protocol: string, extra: Record<string, unknown> = {}) => ({
  'frontend-address': { ip, port: 80, protocol },
  'backend-addresses': [{ ip: '10.0.9.1', port: 8080 }],
  flags: { type: 'ClusterIP' },
  ...extra,
});
const RAW_JSON = 'application/json; charset=utf-8';
const letters = 'abcdefghijklm';
const BOMB = `a: &a [x, x, x, x, x, x, x, x, x]\n${[...letters.slice(1)].map((l, i) => `${l}: &${l} [${Array(9).fill(`*${letters[i]}`).join(', ')}]`).join('\n')}\n`;

t.test('hostile input answers 400 naming the field, and changes nothing', async (t) => {
  const a = await startAgent(t, { 'enable-api-rate-limit': false });
  const expect = async (operationId: string, method: string, path: string, status: number, opts: Parameters<typeof a.call>[3] = {}) => {
    const res = await a.call(operationId, method, path, opts);
    t.equal(res.status, status, `${method} ${path} -> ${status}`);
    t.same(res.problems, [], `${method} ${path}: the answer matches the spec`);
    return res;
  };

  for (const id of ['1e3', '0x10', '%2012', '+12', '12.0', '012', '-1', '1%20']) {
    const put = await expect('PutServiceID', 'PUT', `/service/${id}`, 400, { body: svc('10.96.9.1', 'tcp') });
    t.match(put.body, { error: { field: '/path/id', message: /is not a decimal integer/ } }, `PUT /service/${id}`);
    await expect('GetServiceID', 'GET', `/service/${id}`, 400);
    await expect('DeleteServiceID', 'DELETE', `/service/${id}`, 400);
  }
  t.same((await expect('GetService', 'GET', '/service', 200)).body, [], 'no service was created (1e3 is not service 1000)');
  const trace = await expect('GetCelliumPolicyTrace', 'GET', '/cellium/policy/trace?src-identity=1e0&dst-identity=2&dport=80', 400);
  t.match(trace.body, { error: { field: '/query/src-identity' } });
  await expect('GetCelliumPolicyTrace', 'GET', '/cellium/policy/trace?src-identity=1&dst-identity=2&dport=8e1', 400);
  await expect('GetIdentityID', 'GET', '/identity/1e3', 400);
  await expect('GetEndpointID', 'GET', '/endpoint/0x10', 400);

  const revision = ((await expect('GetPolicy', 'GET', '/policy', 200)).body as { revision: number }).revision;
  for (const contentType of ['application/yaml', 'text/plain']) {
    const bomb = await expect('PutPolicy', 'PUT', '/policy', 400, { body: BOMB, contentType });
    t.match(bomb.body, { error: { message: /not JSON or YAML \(Excessive alias count/ } }, `policy alias bomb as ${contentType}`);
  }
  const imp = await expect('PostCelliumServiceImport', 'POST', '/cellium/service/import', 400, { body: BOMB, contentType: 'application/yaml' });
  t.match(imp.body, { error: { message: /document 1: is not YAML or JSON \(Excessive alias count/ } });
  const deepYaml = `${'['.repeat(3000)}${']'.repeat(3000)}\n`;
  await expect('PutPolicy', 'PUT', '/policy', 400, { body: deepYaml, contentType: 'application/yaml' });
  await expect('PostCelliumServiceImport', 'POST', '/cellium/service/import', 400, { body: deepYaml, contentType: 'application/yaml' });
  const dupPolicy = await expect('PutPolicy', 'PUT', '/policy', 400, { body: '[{"endpointSelector":{},"endpointSelector":{"matchLabels":{"app":"x"}}}]', contentType: 'text/plain' });
  t.match(dupPolicy.body, { error: { message: /the key \\"endpointSelector\\" is given twice|the key "endpointSelector" is given twice/ } });
  t.equal(((await expect('GetPolicy', 'GET', '/policy', 200)).body as { revision: number }).revision, revision, 'no policy change');

  const dup = await expect('PutServiceID', 'PUT', '/service/9', 400, { body: '{"id":9,"frontend-address":{"ip":"10.96.9.1","port":80},"frontend-address":{"ip":"10.96.9.2","port":80}}', contentType: RAW_JSON });
  t.match(dup.body, { error: { field: '/body/frontend-address', message: /given twice in one object/ } });
  const deep = await expect('PutServiceID', 'PUT', '/service/9', 400, { body: `{"flags":${'{"a":'.repeat(500)}1${'}'.repeat(500)}}`, contentType: RAW_JSON });
  t.match(deep.body, { error: { message: /nests deeper than 100 levels/ } });
  await expect('PutEndpointID', 'PUT', '/endpoint/12', 400, { body: `{"labels":${'['.repeat(5000)}${']'.repeat(5000)}}`, contentType: RAW_JSON });
  t.same((await expect('GetService', 'GET', '/service', 200)).body, [], 'still no service');
});

t.test("Cilium's protocol case: TCP, UDP, ANY are taken (answered in lower case), other cases are not", async (t) => {
  const a = await startAgent(t, { 'enable-api-rate-limit': false });
  for (const [i, p] of ['TCP', 'UDP', 'ANY', 'tcp'].entries()) {
    const res = await a.call('PutServiceID', 'PUT', `/service/${i + 1}`, { body: svc(`10.96.9.${i + 1}`, p) });
    t.equal(res.status, 201, p);
    const got = await a.call('GetServiceID', 'GET', `/service/${i + 1}`);
    t.match(got.body, { spec: { 'frontend-address': { protocol: p.toLowerCase() } } }, p);
    t.same(got.problems, []);
  }
  const mixed = await a.call('PutServiceID', 'PUT', '/service/9', { body: svc('10.96.9.9', 'Tcp') });
  t.equal(mixed.status, 400);
  t.match(mixed.body, { error: { field: '/body/frontend-address/protocol' } });
});

t.test('option names that are properties of every object (toString, constructor, __proto__) are unknown options, not a 500', async (t) => {
  const a = await startAgent(t, { 'enable-api-rate-limit': false });
  const ep = await a.call('PutEndpointID', 'PUT', '/endpoint/7', { body: podRequest(1, { ipv4: '10.210.0.10' }) });
  t.equal(ep.status, 201);
  for (const name of ['toString', 'constructor', 'hasOwnProperty', '__proto__']) {
    const body = `{"options":{${JSON.stringify(name)}:"Enabled"}}`;
    for (const [operationId, path] of [['PatchConfig', '/config'], ['PatchEndpointIDConfig', '/endpoint/7/config']] as const) {
      const res = await a.call(operationId, 'PATCH', path, { body, contentType: RAW_JSON });
      t.equal(res.status, 400, `${path} ${name}`);
      t.same(res.problems, []);
      t.match(res.body, { error: { field: `/body/options/${name}` } }, `${path} ${name}: names the option`);
    }
  }
  t.equal((await a.call('GetHealthz', 'GET', '/healthz')).status, 200);
});
