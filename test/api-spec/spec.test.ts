// api/openapi.yaml: valid OpenAPI 3.1, covers the operations issue 4 lists, Cilium's paths and
// prefixes, our additions marked, rate-limited operations declare 429 with Retry-After.
import t from 'tap';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compileErrors, validate } from '@readme/openapi-parser';
import { parse, stringify } from 'yaml';
import { createSpecValidator, defaultSpecPath, indexSpec, loadApiSpec } from '../../src/api/spec.js';
import { SpecError } from '../../src/api/errors.js';

const spec = loadApiSpec();

t.test('the spec is valid OpenAPI 3.1', async (t) => {
  const doc = parse(readFileSync(defaultSpecPath(), 'utf8')) as Record<string, unknown>;
  t.equal(doc.openapi, '3.1.0');
  const result = await validate(defaultSpecPath());
  t.equal(result.valid, true, result.valid ? 'valid' : compileErrors(result));
  t.same(result.warnings, [], 'no warnings');
});

t.test('the OpenAPI validator does reject a broken copy', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cellium-spec-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const doc = parse(readFileSync(defaultSpecPath(), 'utf8')) as { paths: Record<string, Record<string, Record<string, unknown>>> };
  doc.paths['/healthz']!.get!.responses = 'none';
  const file = join(dir, 'broken.yaml');
  writeFileSync(file, stringify(doc));
  const result = await validate(file);
  t.equal(result.valid, false);
});

const REQUIRED: readonly [string, string][] = [
  ['get', '/healthz'],
  ['get', '/config'],
  ['patch', '/config'],
  ['get', '/endpoint'],
  ['delete', '/endpoint'],
  ['get', '/endpoint/{id}'],
  ['put', '/endpoint/{id}'],
  ['patch', '/endpoint/{id}'],
  ['delete', '/endpoint/{id}'],
  ['get', '/endpoint/{id}/config'],
  ['patch', '/endpoint/{id}/config'],
  ['get', '/endpoint/{id}/labels'],
  ['patch', '/endpoint/{id}/labels'],
  ['get', '/endpoint/{id}/log'],
  ['get', '/endpoint/{id}/healthz'],
  ['get', '/identity'],
  ['get', '/identity/{id}'],
  ['get', '/identity/endpoints'],
  ['post', '/ipam'],
  ['post', '/ipam/{ip}'],
  ['delete', '/ipam/{ip}'],
  ['get', '/policy'],
  ['put', '/policy'],
  ['delete', '/policy'],
  ['get', '/policy/selectors'],
  ['get', '/map'],
  ['get', '/map/{name}'],
];

t.test('every operation of issue 4 is in the spec, under /v1', async (t) => {
  for (const [method, path] of REQUIRED) {
    const op = spec.operations.find((o) => o.method === method && o.path === path);
    t.ok(op, `${method.toUpperCase()} ${path}`);
    t.equal(op?.fullPath, `/v1${path}`);
  }
  t.equal(new Set(spec.operations.map((o) => o.operationId)).size, spec.operations.length, 'operation ids are unique');
});

/** Cilium v1.15's /service/{id} operations, gone from the reference spec (docs/api.md): marked x-cellium. */
const SERVICE_V115 = ['GetServiceID', 'PutServiceID', 'DeleteServiceID'];

/** Our operations on a path Cilium has, with a method Cilium's spec does not define there (docs/api.md). */
const OURS_ON_CILIUM_PATHS = ['GetIpam', ...SERVICE_V115];

t.test("our additions live under /cellium/ (or are an extra method on a Cilium path) and are marked x-cellium; Cilium's operations are not", async (t) => {
  for (const op of spec.operations) {
    t.equal(op.cellium, op.path.startsWith('/cellium/') || OURS_ON_CILIUM_PATHS.includes(op.operationId), `${op.operationId} ${op.path}`);
  }
  t.ok(spec.operations.find((o) => o.operationId === 'PostCelliumCni'));
  t.ok(spec.operations.find((o) => o.operationId === 'GetCelliumPolicyTrace'));
  const marked = Object.entries(spec.schemas).filter(([, s]) => s['x-cellium'] === true).map(([n]) => n);
  t.same(marked.sort(), ['CelliumExplainDirection', 'CelliumExplainProposal', 'CelliumExplainRequest', 'CelliumExplainSide', 'CelliumExplanation', 'CelliumIPAM', 'CelliumIPAMAddress', 'CelliumIPAMPool', 'CelliumPolicyRealized', 'CelliumServiceImport', 'CelliumTraceResult', 'CniRequest', 'HealthNode', 'TraceDirection', 'ValidationError']);
});

t.test('rate-limited endpoint operations declare 429 with a Retry-After header', async (t) => {
  const limited = spec.operations.filter((o) => o.path.startsWith('/endpoint'));
  t.equal(limited.length, 12);
  for (const op of limited) {
    const r = op.responses['429'];
    t.ok(r, `${op.operationId} has 429`);
    t.ok(r?.headers.some((h) => h.name === 'retry-after' && h.required), `${op.operationId} 429 has Retry-After`);
  }
});

t.test('the endpoint id parameter takes numbers and Cilium prefixes, nothing else', async (t) => {
  const v = createSpecValidator(spec);
  const ok = ['12', 'cilium-local:12', 'container-id:3f6c0e2d9a', 'pod-name:default/web-0', 'pod-name:default:web-0', 'cni-attachment-id:3f6c:eth0', 'ipv4:10.200.0.12', 'ipv6:fd00::c'];
  for (const id of ok) t.ok(v.request('GetEndpointID', { path: { id } }).ok, id);
  const bad = ['', 'web', 'cilium-local:x', 'ipv4:10.0.0.300', 'pod-name:web', 'container-id:', '-1', 'container-id:a b'];
  for (const id of bad) {
    const r = v.request('GetEndpointID', { path: { id } });
    t.equal(r.ok, false, `rejects "${id}"`);
    if (!r.ok) t.equal(r.error.field, '/path/id');
  }
});

t.test('path matching: literal segments first, percent-decoding, 405 information', async (t) => {
  t.equal(spec.match('GET', '/v1/identity/endpoints')?.operation?.operationId, 'GetIdentityEndpoints');
  t.equal(spec.match('GET', '/v1/identity/42')?.operation?.operationId, 'GetIdentityID');
  t.same(spec.match('GET', '/v1/endpoint/pod-name%3Adefault%2Fweb-0?x=1')?.pathParams, { id: 'pod-name:default/web-0' });
  const m = spec.match('POST', '/v1/endpoint/12');
  t.equal(m?.operation, undefined);
  t.same([...(m?.allowed ?? [])].sort(), ['delete', 'get', 'patch', 'put']);
  t.equal(spec.match('GET', '/v2/healthz'), undefined);
  t.equal(spec.match('GET', '/v1/nothing'), undefined);
  t.equal(spec.match('GET', '/v1/endpoint/%E0%A4%A'), undefined, 'broken escapes do not match');
});

t.test('unknown operations and models are SpecErrors', async (t) => {
  t.throws(() => spec.operation('Nope'), SpecError);
  t.throws(() => createSpecValidator(spec).model('Nope', {}), SpecError);
  t.throws(() => indexSpec({ openapi: '3.1.0' }), SpecError);
  t.throws(() => loadApiSpec('/nonexistent/openapi.yaml'), /cannot read the API spec/);
});

t.test('every model compiles under strict ajv', async (t) => {
  const v = createSpecValidator(spec);
  for (const name of Object.keys(spec.schemas)) {
    t.doesNotThrow(() => v.model(name, null), name);
  }
});
