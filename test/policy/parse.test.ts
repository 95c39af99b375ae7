import t from 'tap';
import { PolicyError } from '../../src/cells/policy/index.js';
import { policyHive, rules } from './helpers.js';

const cnp = (spec: object, name = 'p1', namespace = 'prod') => JSON.stringify({ apiVersion: 'cilium.io/v2', kind: 'CiliumNetworkPolicy', metadata: { name, namespace }, spec });

t.test('errors name the field (JSON pointer) and the fix', async (t) => {
  const { repo } = await policyHive(t);
  const cases: [string, RegExp][] = [
    [cnp({ endpointSelector: {}, ingress: [{ fromEndpoint: [{}] }] }), /at \/spec\/ingress\/0\/fromEndpoint: field "fromEndpoint" is unknown.*supported here: fromEndpoints, fromEntities, fromCIDR, fromCIDRSet, toPorts/],
    [cnp({ endpointSelector: {}, ingress: [{ toPorts: [{ ports: [{ port: '80', protocol: 'HTTP' }] }] }] }), /at \/spec\/ingress\/0\/toPorts\/0\/ports\/0\/protocol: "HTTP" is not allowed; fix: use one of TCP, UDP, SCTP, ICMP, ANY/],
    [cnp({ endpointSelector: {}, ingress: [{ toPorts: [{ ports: [{ port: 'HTTP' }] }] }] }), /\/ports\/0\/port: "HTTP" is not a port number nor a port name.*port name of lowercase letters/],
    [cnp({ endpointSelector: {}, ingress: [{ toPorts: [{ ports: [{ port: '8080x--y' }] }] }] }), /\/ports\/0\/port: "8080x--y" is not a port number nor a port name/],
    [cnp({ endpointSelector: {}, egress: [{ toPorts: [{ ports: [{ port: 'dns', endPort: 60 }] }] }] }), /\/spec\/egress\/0\/toPorts\/0\/ports\/0\/endPort: endPort with a named port.*fix: drop endPort, or give port numbers/],
    [cnp({ endpointSelector: {}, ingress: [{ toPorts: [{ ports: [{ port: 'http', endPort: 90 }] }] }] }), /\/ports\/0\/endPort: endPort with a named port/],
    [cnp({ endpointSelector: {}, ingress: [{ toPorts: [{ ports: [{ port: '90', endPort: 80 }] }] }] }), /\/ports\/0\/endPort: endPort 80 is below port 90; fix: set endPort >= 90/],
    [cnp({ endpointSelector: {}, ingress: [{ toPorts: [{ ports: [{ port: '7', protocol: 'ICMP' }] }] }] }), /\/ports\/0\/port: ICMP has no ports/],
    [cnp({ endpointSelector: { matchExpressions: [{ key: 'app', operator: 'In' }] } }), /\/spec\/endpointSelector\/matchExpressions\/0\/values: operator In needs at least one value/],
    [cnp({ endpointSelector: { matchExpressions: [{ key: 'app', operator: 'Exists', values: ['x'] }] } }), /operator Exists takes no values/],
    [cnp({ endpointSelector: { matchExpressions: [{ key: 'app', operator: 'Has' }] } }), /matchExpressions\/0\/operator: "Has" is not allowed; fix: use one of In, NotIn, Exists, DoesNotExist/],
    [cnp({ endpointSelector: {}, egress: [{ toCIDR: ['10.0.0.0/33'] }] }), /\/spec\/egress\/0\/toCIDR\/0: .*invalid prefix length.*fix: write a CIDR/],
    [cnp({ endpointSelector: {}, egress: [{ toEntities: ['galaxy'] }] }), /\/spec\/egress\/0\/toEntities\/0: "galaxy" is not allowed; fix: use one of all, world/],
    [cnp({ ingress: [] }), /at \/spec\/endpointSelector: required field "endpointSelector" is missing; fix: add "endpointSelector"/],
    [JSON.stringify({ apiVersion: 'cilium.io/v1', kind: 'CiliumNetworkPolicy', metadata: { name: 'x' }, spec: { endpointSelector: {} } }), /at \/apiVersion: "cilium.io\/v1" is not allowed; fix: use "cilium.io\/v2"/],
    [JSON.stringify({ apiVersion: 'cilium.io/v2', kind: 'CiliumNetworkPolicy', metadata: { name: 'x' } }), /\/spec: the resource has neither spec nor specs/],
    [rules({ endpointSelector: {} }, { endpointSelector: {}, egress: [{ toPorts: [{}] }] }), /at \/1\/egress\/0\/toPorts\/0\/ports: a toPorts entry without ports/],
    [rules({ endpointSelector: {}, labels: [42] }), /at \/0\/labels\/0: 42 is not a label/],
    ['endpointSelector: [unclosed', /not JSON or YAML/],
    ['', /empty input/],
    ['[]', /no rules found/],
  ];
  for (const [text, re] of cases) {
    const err = t.throws(() => repo.import(text), PolicyError) as unknown as PolicyError;
    t.match(err.message, re, re.source);
  }
  t.equal(repo.revision, 1, 'nothing changed');
  t.same(repo.get(), []);
});

t.test('YAML: a multi-document file, and an error names its document', async (t) => {
  const { repo } = await policyHive(t);
  const yaml = `apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: a, namespace: prod}
spec:
  endpointSelector: {matchLabels: {app: web}}
  ingress:
  - fromEndpoints: [{matchLabels: {app: client}}]
    toPorts: [{ports: [{port: "80", protocol: TCP}]}]
---
apiVersion: cilium.io/v2
kind: CiliumClusterwideNetworkPolicy
metadata: {name: b}
specs:
- endpointSelector: {}
  egress: [{toEntities: [world]}]
- endpointSelector: {matchLabels: {role: db}}
  ingressDeny: [{fromEntities: [world]}]
`;
  const change = repo.import(yaml);
  t.equal(change.added, 3);
  t.equal(change.revision, 2);
  const bad = yaml.replace('protocol: TCP', 'protocol: tcp');
  const err = t.throws(() => repo.import(bad)) as unknown as PolicyError;
  t.match(err.message, /invalid policy \(document 1\) at \/spec\/ingress\/0\/toPorts\/0\/ports\/0\/protocol/);
  t.equal(err.document, 1);
  t.equal(err.pointer, '/spec/ingress/0/toPorts/0/ports/0/protocol');
  t.equal(repo.get().length, 3, 'all-or-nothing: the bad import changed nothing');
  t.equal(repo.revision, 2);
});

t.test('a List of policies and a single bare rule are accepted', async (t) => {
  const { repo } = await policyHive(t);
  const list = { apiVersion: 'v1', kind: 'List', items: [JSON.parse(cnp({ endpointSelector: {} }, 'one')), JSON.parse(cnp({ endpointSelector: {} }, 'two'))] };
  t.equal(repo.import(JSON.stringify(list)).added, 2);
  t.equal(repo.import(JSON.stringify({ endpointSelector: {}, labels: ['team=a'] })).added, 1);
  const bad = { ...list, items: [list.items[0], { ...list.items[1], spec: { endpointSelector: {}, bogus: 1 } }] };
  t.throws(() => repo.import(JSON.stringify(bad)), /at \/items\/1\/spec\/bogus/);
});
