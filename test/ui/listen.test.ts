// Where `cellium ui` listens: loopback only, a bad address refused naming the value and the fix;
// and the page's filters as a GetFlows request, a bad one refused naming the parameter.
import t from 'tap';
import { flowpb } from '../../src/hubble/index.js';
import { flowsRequest, isLoopback, parseListenAddress } from '../../src/ui/index.js';

t.test('loopback addresses are accepted', async (t) => {
  t.same(parseListenAddress('127.0.0.1:12000'), { host: '127.0.0.1', port: 12000 });
  t.same(parseListenAddress('[::1]:0'), { host: '::1', port: 0 });
  t.same(parseListenAddress('localhost:8080'), { host: 'localhost', port: 8080 });
  t.same(parseListenAddress('127.1.2.3:1'), { host: '127.1.2.3', port: 1 });
  t.same(parseListenAddress('9000'), { host: '127.0.0.1', port: 9000 }, 'a port alone: 127.0.0.1');
  t.ok(isLoopback('::ffff:127.0.0.1'));
});

t.test('anything else is refused with the fix', async (t) => {
  t.throws(() => parseListenAddress('0.0.0.0:12000'), { name: 'UiListenError', message: /--address "0.0.0.0:12000": 0.0.0.0 is not a loopback address: .*listens on loopback only.*ssh -L 12000:127.0.0.1:12000/ });
  t.throws(() => parseListenAddress('[::]:80'), /:: is not a loopback address/);
  t.throws(() => parseListenAddress('10.0.0.1:80'), /10.0.0.1 is not a loopback address/);
  t.throws(() => parseListenAddress('example.com:80'), /example.com is not a loopback address/);
  t.throws(() => parseListenAddress(':80'), /empty host would listen on every address/);
  t.throws(() => parseListenAddress('127.0.0.1:70000'), /port must be 0-65535/);
  t.throws(() => parseListenAddress('127.0.0.1'), /expected HOST:PORT/);
  t.throws(() => parseListenAddress('::1:80'), /expected HOST:PORT/, 'IPv6 needs brackets');
});

const q = (s: string): URLSearchParams => new URLSearchParams(s);

t.test('filters become whitelist filters as hubble observe makes them', async (t) => {
  t.match(flowsRequest(q('')), { follow: true, number: 200, whitelist: [] }, 'none: every flow, the last 200 first');
  t.match(flowsRequest(q('verdict=dropped&protocol=TCP&last=5')), { number: 5, whitelist: [{ verdict: [flowpb.Verdict.DROPPED], protocol: ['tcp'] }] });
  const r = flowsRequest(q('pod=default/web&label=app%3Dweb&port=80&drop_reason=POLICY_DENIED'));
  t.equal(r.whitelist.length, 2, 'either side: one filter each');
  t.match(r.whitelist[0], { sourcePod: ['default/web'], sourceLabel: ['app=web'], sourcePort: ['80'], destinationPod: [], dropReasonDesc: [flowpb.DropReason.POLICY_DENIED] });
  t.match(r.whitelist[1], { destinationPod: ['default/web'], destinationLabel: ['app=web'], destinationPort: ['80'], sourcePod: [] });
  t.match(flowsRequest(q('namespace=shop')).whitelist, [{ sourcePod: ['shop/'] }, { destinationPod: ['shop/'] }], 'a namespace: all its pods');
  t.match(flowsRequest(q('namespace=shop&pod=web')).whitelist, [{ sourcePod: ['shop/web'] }, { destinationPod: ['shop/web'] }], 'a pod in the namespace');
  t.match(flowsRequest(q('drop_reason=158')).whitelist, [{ dropReasonDesc: [158] }], 'a drop reason by number');
});

t.test('a bad filter names the parameter and the fix', async (t) => {
  const bad: Array<[string, RegExp]> = [
    ['verdict=maybe', /filter verdict "maybe": use one of FORWARDED, DROPPED/],
    ['protocol=http', /filter protocol "http": use one of tcp, udp/],
    ['port=99999', /filter port "99999": expected a port number 0-65535/],
    ['port=web', /filter port "web"/],
    ['label=a%20b%20c', /filter label "a b c": label selector/],
    ['drop_reason=BECAUSE', /filter drop_reason "BECAUSE": expected a Hubble drop reason name/],
    ['namespace=Not_A_Namespace', /filter namespace "Not_A_Namespace": expected a Kubernetes namespace name/],
    ['pod=%3Cscript%3E', /filter pod "<script>": expected NAMESPACE\/POD-PREFIX/],
    ['last=-1', /filter last "-1": expected a whole number/],
    ['last=100000', /filter last "100000"/],
    ['color=red', /filter color "red": not a filter: use pod, namespace/],
  ];
  for (const [query, re] of bad) t.throws(() => flowsRequest(q(query)), { name: 'UiFilterError', message: re }, query);
});
