import t from 'tap';
import { Proto, ReservedIdentity, type PolicyEntry } from '../../src/datapath/types.js';
import { policyHive, rules, lpmVerdict } from './helpers.js';

const ns = (n: string) => `k8s:io.kubernetes.pod.namespace=${n}`;
const allowedFrom = (entries: readonly PolicyEntry[], peer: number, proto: number = Proto.TCP, port = 80) => lpmVerdict(entries, 'ingress', peer, proto, port);
const allowedTo = (entries: readonly PolicyEntry[], peer: number, proto: number = Proto.TCP, port = 80) => lpmVerdict(entries, 'egress', peer, proto, port);

t.test('label selectors: matchLabels and matchExpressions In, NotIn, Exists, DoesNotExist; sources', async (t) => {
  const { repo, alloc } = await policyHive(t);
  const a = alloc.id('k8s:app=a', 'k8s:tier=front', ns('prod'));
  const b = alloc.id('k8s:app=b', 'k8s:tier=back', ns('prod'));
  const c = alloc.id('k8s:app=c', ns('prod'));
  const d = alloc.id('container:app=a');
  const selected = (sel: object) => {
    repo.delete('all');
    repo.import(rules({ endpointSelector: sel, ingress: [{}] }));
    return [a, b, c, d].filter((i) => repo.resolve(i).ingressEnforced).map((i) => i.labels.find((l) => l.includes('app='))!);
  };
  t.same(selected({ matchLabels: { app: 'a' } }), ['k8s:app=a', 'container:app=a'], 'no source: any source');
  t.same(selected({ matchLabels: { 'k8s:app': 'a' } }), ['k8s:app=a'], 'k8s: source');
  t.same(selected({ matchExpressions: [{ key: 'app', operator: 'In', values: ['a', 'b'] }] }), ['k8s:app=a', 'k8s:app=b', 'container:app=a']);
  t.same(selected({ matchExpressions: [{ key: 'k8s:app', operator: 'NotIn', values: ['a', 'b'] }] }), ['k8s:app=c', 'container:app=a'], 'NotIn matches a missing key');
  t.same(selected({ matchExpressions: [{ key: 'tier', operator: 'Exists' }] }), ['k8s:app=a', 'k8s:app=b']);
  t.same(selected({ matchExpressions: [{ key: 'tier', operator: 'DoesNotExist' }] }), ['k8s:app=c', 'container:app=a']);
  t.same(selected({ matchLabels: { app: 'a' }, matchExpressions: [{ key: 'tier', operator: 'In', values: ['front'] }] }), ['k8s:app=a'], 'requirements AND');
});

t.test('CiliumNetworkPolicy namespaces: the subject and namespace-less peers are restricted to the namespace', async (t) => {
  const { repo, alloc } = await policyHive(t);
  const prodWeb = alloc.id('k8s:app=web', ns('prod'));
  const devWeb = alloc.id('k8s:app=web', ns('dev'));
  const prodClient = alloc.id('k8s:app=client', ns('prod'));
  const devClient = alloc.id('k8s:app=client', ns('dev'));
  const change = repo.import(JSON.stringify({
    apiVersion: 'cilium.io/v2', kind: 'CiliumNetworkPolicy', metadata: { name: 'web', namespace: 'prod' },
    spec: { endpointSelector: { matchLabels: { app: 'web' } }, ingress: [{ fromEndpoints: [{ matchLabels: { app: 'client' } }, { matchLabels: { app: 'client', 'k8s:io.kubernetes.pod.namespace': 'dev' } }] }] },
  }));
  t.same([...(change.affected as Set<number>)], [prodWeb.id], 'only the prod endpoint is affected');
  t.notOk(repo.resolve(devWeb).ingressEnforced);
  const p = repo.resolve(prodWeb);
  t.equal(allowedFrom(p.entries, prodClient.id), 'allowed');
  t.equal(allowedFrom(p.entries, devClient.id), 'allowed', 'explicit namespace in the peer selector');
  t.same(p.allowedIngressIdentities, [prodClient.id, devClient.id].sort((x, y) => x - y));
  t.same(repo.get()[0]!.labels, [
    'k8s:io.cilium.k8s.policy.derived-from=CiliumNetworkPolicy', 'k8s:io.cilium.k8s.policy.name=web', 'k8s:io.cilium.k8s.policy.namespace=prod',
  ]);
  repo.import(JSON.stringify({
    apiVersion: 'cilium.io/v2', kind: 'CiliumNetworkPolicy', metadata: { name: 'web', namespace: 'prod' },
    spec: { endpointSelector: {}, ingress: [{ fromEndpoints: [{}] }] },
  }));
  t.equal(repo.get().length, 1, 'same resource: replaced');
  const q = repo.resolve(prodWeb);
  t.equal(allowedFrom(q.entries, prodClient.id), 'allowed');
  t.equal(allowedFrom(q.entries, devClient.id), 'denied', '{} in a namespaced policy is "this namespace", not everything');
  t.notOk(repo.resolve(devWeb).ingressEnforced, 'endpointSelector {} of a namespaced policy: that namespace only');
  // stored rules show the namespace they select, so re-importing them as bare rules keeps their meaning
  const stored = repo.get();
  t.same((stored[0] as { endpointSelector: unknown }).endpointSelector, { matchLabels: { 'k8s:io.kubernetes.pod.namespace': 'prod' } });
  const before = repo.resolve(prodWeb).entries;
  repo.delete('all');
  repo.import(JSON.stringify(stored));
  t.same(repo.resolve(prodWeb).entries, before);
  t.notOk(repo.resolve(devWeb).ingressEnforced);
});

t.test('entities: world, host, cluster, all, remote-node', async (t) => {
  const { repo, alloc } = await policyHive(t);
  const web = alloc.id('k8s:app=web');
  const other = alloc.id('k8s:app=other');
  const cidr = await alloc.allocateCIDR('192.0.2.0/24');
  const verdicts = (entity: string) => {
    repo.delete('all');
    repo.import(rules({ endpointSelector: { matchLabels: { app: 'web' } }, ingress: [{ fromEntities: [entity] }] }));
    const p = repo.resolve(web);
    return [ReservedIdentity.host, ReservedIdentity.world, ReservedIdentity.remoteNode, ReservedIdentity.health, other.id, cidr.id, 424242]
      .map((id) => (allowedFrom(p.entries, id) === 'allowed' ? 1 : 0));
  };
  //                              host world remote health other cidr unknown
  t.same(verdicts('host'), [1, 0, 0, 0, 0, 0, 0]);
  t.same(verdicts('world'), [0, 1, 0, 0, 0, 1, 0]);
  t.same(verdicts('remote-node'), [0, 0, 1, 0, 0, 0, 0]);
  t.same(verdicts('cluster'), [1, 0, 1, 1, 1, 0, 0]);
  t.same(verdicts('all'), [1, 1, 1, 1, 1, 1, 1]);
  t.same(repo.resolve(web).entries.filter((e) => e.direction === 'ingress'), [{ identity: 0, direction: 'ingress', protocol: 0, port: 0, deny: false }], 'all is identity 0');
});

t.test('CIDR rules allocate CIDR identities through the allocator and release them with the rule', async (t) => {
  const { repo, alloc } = await policyHive(t);
  const web = alloc.id('k8s:app=web');
  const changes: number[] = [];
  repo.changes$.subscribe((c) => changes.push(c.revision));
  repo.import(rules({ endpointSelector: { matchLabels: { app: 'web' } }, egress: [{ toCIDR: ['10.1.0.0/16', '0.0.0.0/0'] }], labels: ['cidr=1'] }));
  await repo.settled();
  const id = alloc.lookupByLabels([{ source: 'cidr', key: '10.1.0.0/16', value: '' }, { source: 'reserved', key: 'world', value: '' }])!;
  t.ok(id && id.id > 1 << 24, 'a local identity exists for the CIDR');
  const inner = await alloc.allocateCIDR('10.1.2.0/24');
  const outside = await alloc.allocateCIDR('10.2.0.0/16');
  const p = repo.resolve(web);
  t.equal(allowedTo(p.entries, id.id), 'allowed');
  t.equal(allowedTo(p.entries, inner.id), 'allowed', 'a narrower CIDR identity inside the prefix is selected too');
  t.equal(allowedTo(p.entries, outside.id), 'allowed', '0.0.0.0/0 selects every CIDR identity');
  t.equal(allowedTo(p.entries, ReservedIdentity.world), 'allowed', '0.0.0.0/0 selects world');
  t.equal(allowedTo(p.entries, alloc.id('k8s:app=x').id), 'denied', 'but not endpoints');
  t.ok(changes.length >= 2, 'the new CIDR identity reached the selector cache and produced a change');
  repo.delete(['cidr=1']);
  await repo.settled();
  t.ok(alloc.released.includes(id.id), 'released with the rule');
});

t.test('ports: endPort ranges, protocols, ANY expands to TCP/UDP/SCTP', async (t) => {
  const { repo, alloc } = await policyHive(t);
  const web = alloc.id('k8s:app=web');
  const c = alloc.id('k8s:app=c');
  repo.import(rules({
    endpointSelector: { matchLabels: { app: 'web' } },
    ingress: [{ fromEndpoints: [{ matchLabels: { app: 'c' } }], toPorts: [{ ports: [{ port: '8000', endPort: 8080, protocol: 'TCP' }, { port: 53 }, { port: '0', protocol: 'ICMP' }] }] }],
  }));
  const p = repo.resolve(web);
  const v = (proto: number, port: number) => allowedFrom(p.entries, c.id, proto, port);
  t.same([v(Proto.TCP, 7999), v(Proto.TCP, 8000), v(Proto.TCP, 8042), v(Proto.TCP, 8080), v(Proto.TCP, 8081)], ['denied', 'allowed', 'allowed', 'allowed', 'denied']);
  t.same([v(Proto.UDP, 53), v(Proto.TCP, 53), v(Proto.SCTP, 53), v(Proto.UDP, 54)], ['allowed', 'allowed', 'allowed', 'denied']);
  t.equal(v(Proto.ICMP, 0), 'allowed');
  t.same(p.entries.filter((e) => e.protocol === Proto.TCP && e.port === 8000), [{ identity: c.id, direction: 'ingress', protocol: Proto.TCP, port: 8000, endPort: 8080, deny: false }]);
  t.equal(p.entries.filter((e) => e.port === 53).length, 3);
  // an L4-only rule (ports, no peer field) allows those ports from everyone
  repo.import(rules({ endpointSelector: { matchLabels: { app: 'web' } }, ingress: [{ toPorts: [{ ports: [{ port: '443', protocol: 'TCP' }] }] }] }));
  const q = repo.resolve(web);
  t.equal(allowedFrom(q.entries, ReservedIdentity.world, Proto.TCP, 443), 'allowed');
  t.equal(allowedFrom(q.entries, ReservedIdentity.world, Proto.TCP, 444), 'denied');
});
