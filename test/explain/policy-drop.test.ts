// cellium explain, policy drops (unit: the real policy cell and trace, fakes of the endpoint and
// service managers): the ingress and egress decisions section by section, the proposal traced
// with it added and, once imported, allowing exactly that flow in the datapath's own map state
// (an unrelated flow stays denied); a deny rule that wins means no proposal; named ports resolve
// against the destination's pod; the NetworkPolicy form, and where it cannot be said.
import t from 'tap';
import { parse } from 'yaml';
import { Proto } from '../../src/datapath/types.js';
import { NamedPortMapToken } from '../../src/cells/policy/index.js';
import { lpmVerdict } from '../policy/helpers.js';
import { cnp, dropLine, world } from './helpers.js';

const TCP = Proto.TCP;
const webFromClient80 = cnp('web', { endpointSelector: { matchLabels: { app: 'web' } }, ingress: [{ fromEndpoints: [{ matchLabels: { app: 'client' } }], toPorts: [{ ports: [{ port: '80', protocol: 'TCP' }] }] }] });

t.test('ingress default deny: the selecting rule, why its section does not allow, and a checked proposal', async (t) => {
  const w = await world(t);
  w.repo.import(webFromClient80);
  const revision = w.repo.revision;
  const e = w.explainer.explain({ flow: dropLine(w, { port: 81 }) });
  t.equal(w.repo.revision, revision, 'tracing the candidate made no revision');
  t.match(e.reason, { code: 133, name: 'POLICY_DENIED', kind: 'policy' });
  t.match(e.flow, { protocol: 'TCP', port: 81, direction: 'ingress', uuid: 'f-1', source: { pod: 'shop/client-0', endpointId: 11, ip: '10.0.0.11' }, destination: { pod: 'shop/web-0' } });
  t.equal(e.policy?.verdict, 'denied');
  t.match(e.policy?.egress, { verdict: 'allowed', decision: 'not-enforced', selecting: [] });
  const ing = e.policy!.ingress;
  t.match(ing, { verdict: 'denied', enforced: true, decision: 'default-deny', rules: [] });
  t.equal(ing.selecting.length, 1, 'one rule selects the destination');
  t.match(ing.selecting[0], /k8s:io\.cilium\.k8s\.policy\.name=web/);
  t.match(ing.sections, [{ pointer: '/spec/ingress/0', deny: false, peerMatches: true, portMatches: false, ports: '80/TCP', why: /81\/TCP is not among 80\/TCP/ }]);
  t.match(ing.why, /1 rule selects the destination and enforces ingress \(default deny\), but no ingress allow section \(1 considered\) allows the source shop\/client-0/);
  t.match(e.decision, /destination's ingress policy denied it/);

  const p = e.proposal!;
  t.ok(p, 'a proposal');
  t.equal(p.check.verdict, 'allowed', 'checked: the trace with it added allows the flow');
  t.equal(p.objects.length, 1, 'one policy: only ingress denied');
  t.match(p.objects[0], {
    apiVersion: 'cilium.io/v2', kind: 'CiliumNetworkPolicy', metadata: { name: 'explain-allow-client-0-to-web-0-81-tcp', namespace: 'shop' },
    spec: { endpointSelector: { matchLabels: { app: 'web' } }, ingress: [{ fromEndpoints: [{ matchLabels: { app: 'client', 'k8s:io.kubernetes.pod.namespace': 'shop' } }], toPorts: [{ ports: [{ port: '81', protocol: 'TCP' }] }] }] },
  });
  t.same(parse(p.text), p.objects[0], 'the text is the object as YAML');
  t.equal(w.repo.get().length, 1, 'explain changed nothing in the repository');

  // imported, the datapath's map state allows exactly that flow
  w.repo.import(p.text);
  const entries = w.repo.resolve(w.web).entries;
  t.equal(lpmVerdict(entries, 'ingress', w.client.id, TCP, 81), 'allowed', 'client -> web 81/TCP now allowed');
  t.equal(lpmVerdict(entries, 'ingress', w.client.id, TCP, 82), 'denied', 'another port stays denied');
  t.equal(lpmVerdict(entries, 'ingress', w.other.id, TCP, 81), 'denied', 'another pod on the same port stays denied');
  t.equal(lpmVerdict(entries, 'ingress', w.client.id, Proto.UDP, 81), 'denied', 'another protocol stays denied');
  const again = w.explainer.explain({ flow: dropLine(w, { port: 81 }) });
  t.equal(again.policy?.verdict, 'allowed', 'the same flow explained again: allowed now');
  t.match(again.noProposal, /allows 81\/TCP .* now/);
  t.notOk(again.proposal);
});

t.test('egress default deny at the source: the proposal selects the source and names the destination', async (t) => {
  const w = await world(t);
  w.repo.import(cnp('client-out', { endpointSelector: { matchLabels: { app: 'client' } }, egress: [{ toEndpoints: [{ matchLabels: { app: 'other' } }] }] }));
  const e = w.explainer.explain({ flow: dropLine(w, { port: 8080, direction: 'EGRESS' }) });
  t.match(e.policy?.egress, { verdict: 'denied', decision: 'default-deny', sections: [{ pointer: '/spec/egress/0', peerMatches: false, why: /destination shop\/web-0 .* is not selected by/ }] });
  t.match(e.policy?.ingress, { verdict: 'allowed', decision: 'not-enforced' });
  t.match(e.decision, /^the source's egress policy denied it/);
  t.match(e.proposal?.objects, [{ metadata: { name: 'explain-allow-client-0-to-web-0-8080-tcp-egress', namespace: 'shop' }, spec: {
    endpointSelector: { matchLabels: { app: 'client' } }, egress: [{ toEndpoints: [{ matchLabels: { app: 'web', 'k8s:io.kubernetes.pod.namespace': 'shop' } }], toPorts: [{ ports: [{ port: '8080', protocol: 'TCP' }] }] }],
  } }]);
  w.repo.import(e.proposal!.text);
  const out = w.repo.resolve(w.client).entries;
  t.equal(lpmVerdict(out, 'egress', w.web.id, TCP, 8080), 'allowed', 'imported: client -> web 8080 allowed at egress');
  t.equal(lpmVerdict(out, 'egress', w.web.id, TCP, 8081), 'denied', 'and nothing more');
});

t.test('both directions denied: one policy each, and the check needs both', async (t) => {
  const w = await world(t);
  w.repo.import(webFromClient80);
  w.repo.import(cnp('client-out', { endpointSelector: { matchLabels: { app: 'client' } }, egress: [{ toEndpoints: [{ matchLabels: { app: 'other' } }] }] }));
  const e = w.explainer.explain({ flow: dropLine(w, { port: 81 }) });
  t.match(e.decision, /source's egress policy denied it: .*; and the destination's ingress policy denied it/);
  t.same(e.proposal?.objects.map((o) => Object.keys(o.spec as object).filter((k) => k === 'ingress' || k === 'egress')), [['egress'], ['ingress']]);
  t.equal(e.proposal?.check.verdict, 'allowed');
  t.equal(e.proposal?.text.split('---\n').length, 2, 'two YAML documents');
});

t.test('a deny rule wins: the candidate is traced, still denied, and nothing is proposed', async (t) => {
  const w = await world(t);
  w.repo.import(cnp('no-client', { endpointSelector: { matchLabels: { app: 'web' } }, ingressDeny: [{ fromEndpoints: [{ matchLabels: { app: 'client' } }] }] }));
  const e = w.explainer.explain({ flow: dropLine(w, { port: 81, reason: 'POLICY_DENY' }) });
  t.match(e.reason, { code: 181, name: 'POLICY_DENY' });
  t.match(e.policy?.ingress, { verdict: 'denied', decision: 'deny-rule', rules: [/policy\.name=no-client/], sections: [{ deny: true, peerMatches: true, portMatches: true, why: 'matches: denies the flow' }] });
  t.match(e.policy?.ingress.why, /a deny wins over every allow/);
  t.notOk(e.proposal, 'no proposal');
  t.match(e.noProposal, /trace with the proposed policy added still denies the flow \(deny rule .*no-client.* in the destination's ingress matches it/);
  t.equal(e.rejected?.check.verdict, 'denied', 'the refused candidate and its trace are shown');
  t.ok(e.rejected?.check.log.some((l) => /explain-allow-client-0-to-web-0-81-tcp/.test(l)), 'the candidate was in the trace');
});

t.test('named ports: resolved against the destination pod in the explanation, the proposal uses the number', async (t) => {
  const w = await world(t, { webPorts: [{ name: 'http', port: 8080, protocol: 'TCP' }] });
  w.repo.import(cnp('web', { endpointSelector: { matchLabels: { app: 'web' } }, ingress: [{ fromEndpoints: [{ matchLabels: { app: 'client' } }], toPorts: [{ ports: [{ port: 'http', protocol: 'TCP' }, { port: 'metrics', protocol: 'TCP' }] }] }] }));
  const e = w.explainer.explain({ flow: dropLine(w, { port: 8081 }) });
  t.match(e.policy?.ingress.sections, [{ peerMatches: true, portMatches: false, ports: 'named port http = 8080/TCP, named port metrics/TCP (the destination declares no port of that name)' }]);
  t.match(e.proposal?.objects, [{ spec: { ingress: [{ toPorts: [{ ports: [{ port: '8081', protocol: 'TCP' }] }] }] } }]);
  const ok = w.explainer.explain({ flow: dropLine(w, { port: 8080 }) });
  t.equal(ok.policy?.verdict, 'allowed', 'to 8080 (http at the destination) the policy allows: the drop was under an earlier policy');
  t.match(ok.policy?.ingress, { decision: 'allow-rule', sections: [{ portMatches: true }] });
});

t.test('--format k8s: a NetworkPolicy, checked through its translation; not for ICMP', async (t) => {
  const w = await world(t);
  w.repo.import(webFromClient80);
  const e = w.explainer.explain({ flow: dropLine(w, { port: 81 }), format: 'k8s' });
  t.match(e.proposal, { format: 'k8s', check: { verdict: 'allowed' } });
  t.match(e.proposal?.objects, [{
    apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { namespace: 'shop' },
    spec: { podSelector: { matchLabels: { app: 'web' } }, policyTypes: ['Ingress'], ingress: [{ from: [{ podSelector: { matchLabels: { app: 'client' } } }], ports: [{ protocol: 'TCP', port: 81 }] }] },
  }]);
  const peer = (e.proposal?.objects[0]?.spec as { ingress: { from: object[] }[] }).ingress[0]!.from[0]!;
  t.notOk(Object.hasOwn(peer, 'namespaceSelector'), 'same namespace: no namespaceSelector');
  const icmp = w.explainer.explain({ flow: dropLine(w, { proto: 'ICMPv4' }), format: 'k8s' });
  t.notOk(icmp.proposal);
  t.match(icmp.noProposal, /not expressible as a Kubernetes NetworkPolicy: a NetworkPolicy names TCP, UDP and SCTP ports only, not ICMP/);
  const icmpCilium = w.explainer.explain({ flow: dropLine(w, { proto: 'ICMPv4' }) });
  t.match(icmpCilium.proposal?.objects, [{ spec: { ingress: [{ toPorts: [{ ports: [{ port: '0', protocol: 'ICMP' }] }] }] } }], 'as a CiliumNetworkPolicy it is');
  t.equal(icmpCilium.proposal?.check.verdict, 'allowed');
});

t.test('across namespaces: a CiliumNetworkPolicy names the peer\'s namespace; a NetworkPolicy needs namespace labels', async (t) => {
  const w = await world(t);
  w.repo.import(webFromClient80);
  const front = w.alloc.id('k8s:app=client', 'k8s:io.kubernetes.pod.namespace=front');
  const line = dropLine(w, { port: 80 }) as { flow: Record<string, unknown> };
  const flow = { ...line.flow, source: { identity: front.id, labels: front.labels, namespace: 'front', pod_name: 'client-0' } };
  const e = w.explainer.explain({ flow });
  t.match(e.policy?.ingress.sections, [{ peerMatches: false, why: /the source front\/client-0 .* is not selected by any:app=client&k8s:io\.kubernetes\.pod\.namespace=shop/ }], 'the rule selects clients of its own namespace only');
  t.match(e.proposal, { check: { verdict: 'allowed' }, objects: [{ spec: { ingress: [{ fromEndpoints: [{ matchLabels: { app: 'client', 'k8s:io.kubernetes.pod.namespace': 'front' } }] }] } }] });
  const k8s = w.explainer.explain({ flow, format: 'k8s' });
  t.notOk(k8s.proposal, 'the identity carries no namespace labels: the NetworkPolicy would not select it');
  t.match(k8s.rejected?.objects, [{ spec: { ingress: [{ from: [{ podSelector: { matchLabels: { app: 'client' } }, namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'front' } } }] }] } }]);
  t.match(k8s.noProposal, /still denies the flow .*a NetworkPolicy selects another namespace by the namespace's labels, and the identity of front\/client-0 .*carries none .*--format cilium/);
  // an identity from Kubernetes carries its namespace's labels: then the NetworkPolicy selects it
  const labelled = w.alloc.id('k8s:app=client', 'k8s:io.kubernetes.pod.namespace=front', 'k8s:io.cilium.k8s.namespace.labels.kubernetes.io/metadata.name=front');
  const ok = w.explainer.explain({ flow: { ...flow, source: { identity: labelled.id, labels: labelled.labels, namespace: 'front', pod_name: 'client-0' } }, format: 'k8s' });
  t.equal(ok.proposal?.check.verdict, 'allowed', 'with namespace labels the NetworkPolicy is proposed');
});

t.test('a subject without a namespace: a CiliumClusterwideNetworkPolicy', async (t) => {
  const w = await world(t);
  w.repo.import(JSON.stringify({ apiVersion: 'cilium.io/v2', kind: 'CiliumClusterwideNetworkPolicy', metadata: { name: 'web-any' }, spec: { endpointSelector: { matchLabels: { app: 'bare' } }, ingress: [{}] } }));
  const bare = w.alloc.id('k8s:app=bare');
  const line = dropLine(w, { port: 443 }) as { flow: Record<string, unknown> };
  const e = w.explainer.explain({ flow: { ...line.flow, destination: { identity: bare.id, labels: bare.labels } } });
  t.match(e.policy?.ingress, { decision: 'default-deny', sections: [{ peers: [], why: 'selects no peer (an empty peer list)' }] });
  t.match(e.proposal, { check: { verdict: 'allowed' }, objects: [{ kind: 'CiliumClusterwideNetworkPolicy', metadata: { name: 'explain-allow-client-0-to-id' + bare.id + '-443-tcp' }, spec: { endpointSelector: { matchLabels: { app: 'bare' } } } }] });
  t.notOk((e.proposal?.objects[0]?.metadata as Record<string, unknown>).namespace, 'no namespace');
  const k8s = w.explainer.explain({ flow: { ...line.flow, destination: { identity: bare.id, labels: bare.labels } }, format: 'k8s' });
  t.match(k8s.noProposal, /not expressible as a Kubernetes NetworkPolicy: the destination has no namespace, and a NetworkPolicy is namespaced/);
});

t.test('egress named ports: resolved through the node\'s named-port map for the destination', async (t) => {
  const w = await world(t);
  w.h.get(NamedPortMapToken).upsert('endpoint:12', w.web.id, [{ name: 'http', port: 8080, protocol: TCP }]);
  w.repo.import(cnp('client-out', { endpointSelector: { matchLabels: { app: 'client' } }, egress: [{ toEndpoints: [{ matchLabels: { app: 'web' } }], toPorts: [{ ports: [{ port: 'http', protocol: 'TCP' }] }] }] }));
  const e = w.explainer.explain({ flow: dropLine(w, { port: 8081, direction: 'EGRESS' }) });
  t.match(e.policy?.egress, { decision: 'default-deny', sections: [{ peerMatches: true, portMatches: false, ports: 'named port http = 8080/TCP', why: /8081\/TCP is not among named port http = 8080\/TCP/ }] });
  t.equal(w.explainer.explain({ flow: dropLine(w, { port: 8080, direction: 'EGRESS' }) }).policy?.verdict, 'allowed', 'to 8080, the number behind http, it is allowed');
});

t.test('a pod with no label besides its namespace: the proposal selects the namespace, and the details say so', async (t) => {
  const w = await world(t);
  w.repo.import(webFromClient80);
  const plain = w.alloc.id('k8s:io.kubernetes.pod.namespace=shop');
  const line = dropLine(w, { port: 80 }) as { flow: Record<string, unknown> };
  const e = w.explainer.explain({ flow: { ...line.flow, source: { identity: plain.id, labels: plain.labels, namespace: 'shop', pod_name: 'job-1' } } });
  t.match(e.proposal?.objects, [{ spec: { ingress: [{ fromEndpoints: [{ matchLabels: { 'k8s:io.kubernetes.pod.namespace': 'shop' } }] }] } }]);
  t.match(e.details, [/shop\/job-1 .*has no label besides its namespace: the proposal's selector for it selects every pod of namespace shop; give the pod a label to narrow it/]);
});
