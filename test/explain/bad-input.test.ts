// cellium explain, bad input (unit): every mistake in the flow is an ExplainError naming the
// field and the fix; a flow that is not a drop names its verdict; a side the agent does not know
// and that the flow does not describe is not-found. The Observer API's own shape (lower camel case,
// enums by number) reads like hubble's JSON.
import t from 'tap';
import { ExplainError, parseDroppedFlow } from '../../src/cells/explain/index.js';
import { dropLine, world } from './helpers.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

t.test('each bad field is named with its fix', async (t) => {
  const w = await world(t);
  const good = (dropLine(w) as Json).flow as Json;
  const cases: [string, unknown, string, RegExp][] = [
    ['not an object', 'hello', '/flow', /not a flow object/],
    ['a forwarded flow', { ...good, verdict: 'FORWARDED' }, '/flow/verdict', /verdict is FORWARDED, not DROPPED/],
    ['no verdict', { ...good, verdict: undefined }, '/flow/verdict', /missing/],
    ['an unknown verdict', { ...good, verdict: 'MAYBE' }, '/flow/verdict', /"MAYBE" is not a verdict/],
    ['an unknown drop reason', { ...good, drop_reason_desc: 'BAD_LUCK' }, '/flow/drop_reason_desc', /not a Hubble drop reason/],
    ['no drop reason', { ...good, drop_reason_desc: undefined, drop_reason: undefined }, '/flow/drop_reason_desc', /missing/],
    ['a port out of range', { ...good, l4: { TCP: { destination_port: 70000 } } }, '/flow/l4/TCP/destination_port', /from 0 to 65535/],
    ['a bad address', { ...good, IP: { source: '10.0.0.300', destination: '10.0.0.12' } }, '/flow/IP/source', /not an IP address/],
    ['no source', { ...good, source: undefined }, '/flow/source', /missing/],
    ['labels not strings', { ...good, destination: { ...good.destination, labels: [1] } }, '/flow/destination/labels', /label strings/],
    ['a bad identity', { ...good, source: { ...good.source, identity: -3 } }, '/flow/source/identity', /whole number/],
    ['a bad time', { ...good, time: 'yesterday' }, '/flow/time', /not a time/],
  ];
  for (const [what, flow, pointer, problem] of cases) {
    const err = t.throws(() => w.explainer.explain({ flow }), ExplainError, what) as ExplainError;
    t.equal(err.pointer, pointer, `${what}: names ${pointer}`);
    t.match(err.problem, problem, what);
    t.ok(err.fix.length > 10, `${what}: says what to do (${err.fix})`);
    t.equal(err.code, 'invalid');
  }
  const fmt = t.throws(() => w.explainer.explain({ flow: good, format: 'yaml' as 'k8s' })) as ExplainError;
  t.match(fmt, { pointer: '/format', fix: /cilium .* or k8s/ });
});

t.test('a side the agent does not know, without labels in the flow: not-found naming it', async (t) => {
  const w = await world(t);
  const good = (dropLine(w) as Json).flow as Json;
  const err = t.throws(() => w.explainer.explain({ flow: { ...good, source: { identity: 99999, labels: [] } } })) as ExplainError;
  t.match(err, { code: 'not-found', pointer: '/flow/source/identity', problem: /identity 99999 is not known/ });
  // labels in the flow are enough: a pod gone since is traced by its labels
  const byLabels = w.explainer.explain({ flow: { ...good, source: { identity: 99999, labels: ['k8s:app=client', 'k8s:io.kubernetes.pod.namespace=shop'] } } });
  t.equal(byLabels.policy?.verdict, 'allowed', 'no rule: allowed now');
});

t.test('the Observer API shape: camel case, enums by number, a Timestamp', async (t) => {
  const f = parseDroppedFlow({
    time: { seconds: 1795000000, nanos: 5e8 }, uuid: 'u', verdict: 2, dropReasonDesc: 133, IP: { source: 'fd00::1', destination: 'fd00::2' },
    l4: { UDP: { sourcePort: 1, destinationPort: 53 } }, source: { ID: 3, identity: 300, namespace: 'a', labels: ['k8s:app=x'], podName: 'x-0' },
    destination: { ID: 0, identity: 2, namespace: '', labels: ['reserved:world'], podName: '' }, trafficDirection: 2, destinationService: { name: '', namespace: '' },
  });
  t.match(f, { uuid: 'u', time: new Date(1795000000500).toISOString(), protocol: 'UDP', port: 53, direction: 'egress', dropReason: 133, source: { pod: 'a/x-0', endpointId: 3, ip: 'fd00::1' }, destination: { identity: 2, labels: ['reserved:world'] } });
  t.notOk(f.service, 'an empty service is none');
  t.notOk('endpointId' in f.destination, 'ID 0 is not an endpoint');
});
