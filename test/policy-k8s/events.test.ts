// The Event an invalid policy gets, and onceReporter: one Event per object version and error, a
// new version or another error reported again, a failed report retried on the next sighting, the
// memory bounded.
import t from 'tap';
import { PolicyError } from '../../src/cells/policy/index.js';
import { invalidPolicyEvent, onceReporter, type PolicyKind, type PolicyObject } from '../../src/cells/policy-k8s/index.js';

const obj = (rv: string, uid = 'u1', name = 'web'): PolicyObject => ({ metadata: { name, namespace: 'shop', uid, resourceVersion: rv } });
const invalidField = (pointer: string, problem: string, fix: string) => new PolicyError('invalid', pointer, problem, fix);
const bad = invalidField('/spec/ingress/0/fromCIDR/0', 'not a CIDR', 'write a CIDR such as 10.0.0.0/8');

function recorder(failFirst = 0) {
  const calls: { kind: PolicyKind; rv?: string; pointer: string }[] = [];
  let failures = failFirst;
  const report = async (kind: PolicyKind, o: PolicyObject, err: PolicyError) => {
    if (failures > 0) {
      failures--;
      throw new Error('apiserver unavailable');
    }
    calls.push({ kind, rv: o.metadata?.resourceVersion, pointer: err.pointer });
  };
  return { calls, report };
}

t.test('the Event names the object, the field and the fix', async (t) => {
  const ev = invalidPolicyEvent('CiliumNetworkPolicy', obj('7'), bad, 'node-a') as { message: string };
  t.match(ev, {
    kind: 'Event', type: 'Warning', reason: 'InvalidPolicy', metadata: { namespace: 'shop' },
    involvedObject: { kind: 'CiliumNetworkPolicy', apiVersion: 'cilium.io/v2', name: 'web', namespace: 'shop', uid: 'u1', resourceVersion: '7' },
    source: { component: 'cellium-agent', host: 'node-a' },
  });
  t.match(ev.message, /\/spec\/ingress\/0\/fromCIDR\/0: not a CIDR; fix: write a CIDR/);
  const ccnp = invalidPolicyEvent('CiliumClusterwideNetworkPolicy', { metadata: { name: 'all', uid: 'u9' } }, bad, '') as { metadata: { namespace: string }; involvedObject: object };
  t.equal(ccnp.metadata.namespace, 'default', 'a cluster-scoped object reports in default');
  t.notOk('namespace' in ccnp.involvedObject, 'and its involvedObject has no namespace');
});

t.test('the same version with the same error is reported once', async (t) => {
  const { calls, report } = recorder();
  const once = onceReporter(report);
  await once('CiliumNetworkPolicy', obj('7'), bad);
  await once('CiliumNetworkPolicy', obj('7'), bad); // a relist sees it again
  t.equal(calls.length, 1);
  await once('CiliumNetworkPolicy', obj('8'), bad);
  t.equal(calls.length, 2, 'a new version of the object is reported');
  await once('CiliumNetworkPolicy', obj('8'), invalidField('/spec/egress', 'not a list', 'write a list'));
  t.equal(calls.length, 3, 'another error of the same version is reported');
  await once('NetworkPolicy', obj('8'), bad);
  t.equal(calls.length, 4, 'another kind with the same uid is another object');
  await once('CiliumNetworkPolicy', obj('7', 'u2'), bad);
  t.equal(calls.length, 5, 'the same name recreated (new uid) is reported');
});

t.test('a failed report is not remembered: the next sighting reports it', async (t) => {
  const { calls, report } = recorder(1);
  const once = onceReporter(report);
  await t.rejects(once('CiliumNetworkPolicy', obj('7'), bad), /apiserver unavailable/);
  await once('CiliumNetworkPolicy', obj('7'), bad);
  t.equal(calls.length, 1, 'reported on the second sighting');
  await once('CiliumNetworkPolicy', obj('7'), bad);
  t.equal(calls.length, 1, 'and then not again');
});

t.test('memory is bounded: the oldest report is forgotten first', async (t) => {
  const { calls, report } = recorder();
  const once = onceReporter(report, 3);
  for (const name of ['a', 'b', 'c', 'd']) await once('CiliumNetworkPolicy', obj('1', `u-${name}`, name), bad);
  t.equal(calls.length, 4);
  await once('CiliumNetworkPolicy', obj('1', 'u-d', 'd'), bad);
  t.equal(calls.length, 4, 'a recent one is still remembered');
  await once('CiliumNetworkPolicy', obj('1', 'u-a', 'a'), bad);
  t.equal(calls.length, 5, 'the oldest was forgotten and is reported again');
});
