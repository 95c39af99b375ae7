// The spec validator: requests (field pointers, coercion, content types) and responses (fixtures).
import t from 'tap';
import { createSpecValidator, validationErrorBody } from '../../src/api/spec.js';
import { FIXTURES, endpoint12 } from './fixtures.js';

const v = createSpecValidator();

t.test('a bad body field is named by a JSON pointer with what was expected', async (t) => {
  const r = v.request('PutEndpointID', { path: { id: 'cilium-local:0' }, body: { state: 'waiting-for-identity', addressing: { ipv4: '10.0.0.300' } } });
  t.equal(r.ok, false);
  if (r.ok) return;
  t.same(r.error, { field: '/body/addressing/ipv4', message: '/body/addressing/ipv4 must match format "ipv4"', expected: 'string in format ipv4' });
  t.same(validationErrorBody(r.error), { error: r.error });
  t.same(v.response('PutEndpointID', 400, validationErrorBody(r.error)), [], 'the 400 body is a valid ValidationError');
});

t.test('unknown, missing and mistyped fields', async (t) => {
  const unknown = v.request('PutEndpointID', { path: { id: '1' }, body: { state: 'waiting-for-identity', 'container-id': 'c', bogus: 1 } });
  t.match(unknown, { ok: false, error: { field: '/body/bogus', message: '/body/bogus is not a known field', expected: /container-id/ } });
  const missing = v.request('DeleteEndpoint', { body: {} });
  t.match(missing, { ok: false, error: { field: '/body/container-id', message: /is required/ } });
  const noState = v.request('PutEndpointID', { path: { id: '1' }, body: { 'container-id': 'c' } });
  t.match(noState, { ok: false, error: { field: '/body/state', message: '/body/state is required' } }, 'state is required, as in Cilium');
  t.match(v.request('PatchEndpointID', { path: { id: '1' }, body: { labels: ['k8s:a=b'] } }), { ok: false, error: { field: '/body/state' } }, 'PATCH takes the same model');
  const state = v.request('PutEndpointID', { path: { id: '1' }, body: { state: 'happy' } });
  t.match(state, { ok: false, error: { field: '/body/state', expected: /^one of waiting-for-identity, .*invalid$/ } });
  const mac = v.request('PutEndpointID', { path: { id: '1' }, body: { state: 'waiting-for-identity', mac: 'zz' } });
  t.match(mac, { ok: false, error: { field: '/body/mac' } });
  const type = v.request('PutEndpointID', { path: { id: '1' }, body: { state: 'waiting-for-identity', 'interface-index': 'x' } });
  t.match(type, { ok: false, error: { field: '/body/interface-index', expected: 'integer' } });
  const notObject = v.request('PutEndpointID', { path: { id: '1' }, body: [1] });
  t.match(notObject, { ok: false, error: { field: '/body', expected: 'object' } });
});

t.test('a Cilium CNI plugin request is accepted as is', async (t) => {
  const body = {
    'container-id': '3f6c0e2d9a',
    'container-interface-name': 'eth0',
    'interface-name': 'lxc12ab',
    'interface-index': 42,
    mac: '02:00:00:00:00:0c',
    'host-mac': '02:00:00:00:01:0c',
    addressing: { ipv4: '10.200.0.12', 'ipv4-expiration-uuid': 'u1' },
    'k8s-pod-name': 'web-0',
    'k8s-namespace': 'default',
    'k8s-uid': '0d9c',
    labels: ['k8s:app=web'],
    state: 'waiting-for-identity',
    'sync-build-endpoint': true,
    'netns-cookie': '4096',
    'datapath-configuration': { 'external-ipam': false, 'require-routing': true },
    properties: { 'property-skip-bpf-policy': true },
    'policy-enabled': true,
    'datapath-map-id': 0,
    pid: 1234,
    'disable-legacy-identifiers': false,
    'parent-interface-index': 0,
  };
  const r = v.request('PutEndpointID', { path: { id: 'cilium-local:0' }, body, headers: { 'Content-Type': 'application/json' } });
  t.match(r, { ok: true, body, contentType: 'application/json' });
});

t.test('parameters are coerced from strings; defaults applied; arrays from single values', async (t) => {
  const r = v.request('GetCelliumPolicyTrace', { query: { src: 'k8s:app=a', 'dst-identity': '5', dport: '80' } });
  t.match(r, { ok: true, query: { src: ['k8s:app=a'], 'dst-identity': 5, dport: 80, proto: 'TCP' } });
  const many = v.request('GetCelliumPolicyTrace', { query: { src: ['a:x', 'a:y'], dst: ['b:z'], dport: '0', proto: 'UDP' } });
  t.match(many, { ok: true, query: { src: ['a:x', 'a:y'], dst: ['b:z'], dport: 0, proto: 'UDP' } });
  t.match(v.request('GetCelliumPolicyTrace', { query: { dport: 'http' } }), { ok: false, error: { field: '/query/dport', expected: 'integer' } });
  t.match(v.request('GetCelliumPolicyTrace', { query: { dport: '70000' } }), { ok: false, error: { field: '/query/dport', expected: '<= 65535' } });
  t.match(v.request('GetCelliumPolicyTrace', { query: {} }), { ok: false, error: { field: '/query/dport', message: /is required/ } });
  t.match(v.request('GetCelliumPolicyTrace', { query: { dport: '80', proto: 'XTP' } }), { ok: false, error: { field: '/query/proto', expected: /^one of TCP/ } });
  t.match(v.request('PostIpam', { headers: { Expiration: 'true' }, query: { family: 'ipv4' } }), { ok: true, headers: { expiration: true }, query: { family: 'ipv4' } });
  t.match(v.request('PostIpam', { query: { family: 'ipv5' } }), { ok: false, error: { field: '/query/family' } });
  t.match(v.request('PostIpamIP', { path: { ip: 'nope' } }), { ok: false, error: { field: '/path/ip', expected: 'string in format ipv4 or string in format ipv6' } });
  t.match(v.request('PostIpamIP', { path: { ip: 'fd00::5' } }), { ok: true });
  t.match(v.request('GetIdentityID', { path: { id: 'web' } }), { ok: false, error: { field: '/path/id', message: '/path/id must be a numeric identity' } });
});

t.test('bodies: required, forbidden, content types', async (t) => {
  t.match(v.request('PutEndpointID', { path: { id: '1' } }), { ok: false, error: { field: '/body', message: /required/ } });
  t.match(v.request('GetEndpoint', {}), { ok: true, body: undefined }, 'optional body may be absent');
  t.match(v.request('GetEndpoint', { body: ['k8s:app=web'] }), { ok: true });
  t.match(v.request('GetHealthz', { body: { x: 1 } }), { ok: false, error: { field: '/body' } });
  t.match(v.request('PutPolicy', { body: 'rules: []', contentType: 'application/yaml' }), { ok: true, contentType: 'application/yaml' });
  t.match(v.request('PutPolicy', { body: '[]', contentType: 'text/plain; charset=utf-8' }), { ok: true, contentType: 'text/plain' });
  t.match(v.request('PutPolicy', { body: [], contentType: 'application/json' }), { ok: false, error: { field: '/body', expected: 'string' } });
  t.match(v.request('PutPolicy', { body: 'x', contentType: 'application/xml' }), { ok: false, error: { field: '/header/content-type', expected: /application\/json/ } });
  t.match(v.request('PostCelliumCni', { body: { command: 'ADD' } }), { ok: false, error: { field: '/body/containerId' } });
});

t.test('every fixture is a valid response of its operation', async (t) => {
  for (const f of FIXTURES) t.same(v.response(f.operationId, f.status, f.body), [], `${f.operationId} ${f.status}`);
});

t.test('responses: undeclared status, unexpected or invalid body, required headers', async (t) => {
  t.match(v.response('GetMap', 418, undefined), [{ field: '/status' }]);
  t.match(v.response('PatchEndpointID', 200, { x: 1 }), [{ field: '/body', message: /has no body/ }]);
  t.same(v.response('PatchEndpointID', 200, undefined), []);
  t.match(v.response('GetEndpointID', 200, { ...endpoint12, extra: true }), [{ field: '/body/extra' }]);
  t.match(v.response('GetEndpointID', 200, { id: 1, status: { state: 'sleeping' } }), [{ field: '/body/status/state' }]);
  t.match(v.response('PutEndpointID', 429, 'rate limited', {}), [{ field: '/header/retry-after' }]);
  t.same(v.response('PutEndpointID', 429, 'rate limited', { 'Retry-After': '2' }), []);
  const cniResult = { cniVersion: '1.0.0', interfaces: [{ name: 'eth0' }], ips: [{ address: '10.200.0.12/16', gateway: '10.200.0.1', interface: 0 }] };
  t.same(v.response('PostCelliumCni', 200, cniResult, { 'X-Cellium-Cni-Exit-Code': '0' }), [], 'CNI result');
  t.same(v.response('PostCelliumCni', 200, undefined, { 'X-Cellium-Cni-Exit-Code': '0' }), [], 'empty DEL answer');
  t.match(v.response('PostCelliumCni', 200, cniResult, {}), [{ field: '/header/x-cellium-cni-exit-code' }]);
  t.same(v.model('EndpointState', 'ready'), []);
  t.match(v.model('EndpointState', 'asleep'), [{ field: '' }]);
});

t.test('checkHttpRequest: 404, 405 with Allow, 400 with the field, or the validated request', async (t) => {
  const { checkHttpRequest } = await import('../../src/api/http-check.js');
  t.match(checkHttpRequest(v, { method: 'GET', url: '/v1/nope', headers: {} }), { ok: false, status: 404, body: 'no such API path: GET /v1/nope' });
  t.match(checkHttpRequest(v, { method: 'GET', url: '/metrics', headers: {} }), { ok: false, status: 404 });
  t.match(checkHttpRequest(v, { method: 'post', url: '/v1/endpoint/12', headers: {} }), { ok: false, status: 405, allow: 'GET, PUT, DELETE, PATCH' });
  t.match(checkHttpRequest(v, { method: 'PUT', url: '/v1/endpoint/12', headers: { 'content-type': 'application/json' }, body: { state: 'x' } }), {
    ok: false,
    status: 400,
    body: { error: { field: '/body/state' } },
    operation: { operationId: 'PutEndpointID' },
  });
  const ok = checkHttpRequest(v, { method: 'GET', url: '/v1/cellium/policy/trace?src=a:x&src=a:y&dport=80', headers: {} });
  t.match(ok, { ok: true, operation: { operationId: 'GetCelliumPolicyTrace' }, request: { query: { src: ['a:x', 'a:y'], dport: 80, proto: 'TCP' } } });
  const pod = checkHttpRequest(v, { method: 'DELETE', url: '/v1/endpoint/pod-name:default%2Fweb-0', headers: {} });
  t.match(pod, { ok: true, request: { path: { id: 'pod-name:default/web-0' } } });
  t.match(checkHttpRequest(v, { method: 'PUT', url: '/v1/policy', headers: { 'content-type': 'application/yaml' }, body: 'a: 1' }), { ok: true, request: { contentType: 'application/yaml' } });
});
