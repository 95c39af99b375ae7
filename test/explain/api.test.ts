// POST /v1/cellium/policy/explain through the agent's API server (unit: the real API, policy and
// explain cells; the identity allocator's and endpoint manager's fakes): an explanation that
// matches the spec, and bad input answered 400 naming the field of the body and the fix, an
// unknown side 404; the agent stays up.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { createSpecValidator } from '../../src/api/spec.js';
import { Transport } from '../../src/api/transport.js';
import { apiServerCell } from '../../src/cells/api-server/index.js';
import { EndpointManagerToken } from '../../src/cells/endpoint/index.js';
import { explainCell } from '../../src/cells/explain/index.js';
import { FakeIdentityAllocator, IdentityAllocatorToken } from '../../src/cells/identity/index.js';
import { LBServiceManager, ServiceManagerToken } from '../../src/cells/loadbalancer/index.js';
import { policyCell, PolicyRepositoryToken } from '../../src/cells/policy/index.js';
import { statedirCell } from '../../src/cells/statedir/index.js';
import { testHive } from '../../src/hive/index.js';
import { specCaller } from '../api-server/spec-call.js';
import { cnp, fakeEndpoints } from './helpers.js';

const validator = createSpecValidator();

async function setup(t: Test) {
  const dir = mkdtempSync(join(tmpdir(), 'cellium-explain-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const alloc = new FakeIdentityAllocator();
  const client = alloc.id('k8s:app=client', 'k8s:io.kubernetes.pod.namespace=shop');
  const web = alloc.id('k8s:app=web', 'k8s:io.kubernetes.pod.namespace=shop');
  const h = await testHive(t, [statedirCell, apiServerCell, policyCell, explainCell], {
    config: { 'socket-path': join(dir, 'cellium.sock'), 'state-dir': join(dir, 'state'), 'enable-api-rate-limit': false },
    replace: [[IdentityAllocatorToken, alloc], [EndpointManagerToken, fakeEndpoints([])], [ServiceManagerToken, new LBServiceManager()]],
  });
  h.get(PolicyRepositoryToken).import(cnp('web', { endpointSelector: { matchLabels: { app: 'web' } }, ingress: [{ fromEndpoints: [{ matchLabels: { app: 'client' } }], toPorts: [{ ports: [{ port: '80', protocol: 'TCP' }] }] }] }));
  const tr = new Transport({ socketPath: join(dir, 'cellium.sock') });
  t.teardown(() => tr.close());
  const flow = { verdict: 'DROPPED', drop_reason_desc: 'POLICY_DENIED', l4: { TCP: { destination_port: 81 } }, source: { identity: client.id, labels: client.labels }, destination: { identity: web.id, labels: web.labels }, traffic_direction: 'INGRESS' };
  return { call: specCaller(t, tr, validator), flow };
}

t.test('an explanation through the API, as the spec describes it', async (t) => {
  const { call, flow } = await setup(t);
  const r = await call('PostCelliumPolicyExplain', 'POST', '/cellium/policy/explain', { body: { flow: { flow }, format: 'cilium' } });
  t.equal(r.status, 200);
  t.match(r.body, { reason: { name: 'POLICY_DENIED' }, policy: { ingress: { decision: 'default-deny' } }, proposal: { check: { verdict: 'allowed' } } });
});

t.test('bad input: 400 naming the field of the body and the fix; an unknown side 404', async (t) => {
  const { call, flow } = await setup(t);
  const bad = async (body: unknown, field: string, message: RegExp) => {
    const r = await call('PostCelliumPolicyExplain', 'POST', '/cellium/policy/explain', { body });
    t.equal(r.status, 400, field);
    t.match(r.body, { error: { field, message } }, field);
  };
  await bad({}, '/body', /flow/);
  await bad({ flow, format: 'yaml' }, '/body/format', /allowed values/);
  await bad({ flow: { ...flow, l4: { TCP: { destination_port: 'http' } } } }, '/body/flow/l4/TCP/destination_port', /not a whole number.*fix: give a number from 0 to 65535/);
  await bad({ flow: { ...flow, verdict: 'FORWARDED' } }, '/body/flow/verdict', /not DROPPED.*fix: give a dropped flow/);
  const r = await call('PostCelliumPolicyExplain', 'POST', '/cellium/policy/explain', { body: { flow: { ...flow, source: { identity: 777777, labels: [] } } } });
  t.equal(r.status, 404);
  t.match(r.body, /\/flow\/source\/identity: identity 777777 is not known/);
  const again = await call('PostCelliumPolicyExplain', 'POST', '/cellium/policy/explain', { body: { flow } });
  t.equal(again.status, 200, 'the agent still answers');
});
