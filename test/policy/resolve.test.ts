import t from 'tap';
import { Proto, ReservedIdentity, type PolicyEntry } from '../../src/datapath/types.js';
import type { Identity } from '../../src/cells/identity/index.js';
import { policyHive, rules, lpmVerdict, type MockAllocator } from './helpers.js';

const ns = (n: string) => `k8s:io.kubernetes.pod.namespace=${n}`;
const allowedFrom = (entries: readonly PolicyEntry[], peer: number, proto: number = Proto.TCP, port = 80) => lpmVerdict(entries, 'ingress', peer, proto, port);
const allowedTo = (entries: readonly PolicyEntry[], peer: number, proto: number = Proto.TCP, port = 80) => lpmVerdict(entries, 'egress', peer, proto, port);

function world(alloc: MockAllocator): Identity {
  return alloc.lookup(ReservedIdentity.world)!;
}

t.test('default enforcement: unselected endpoints allow all; selection enforces only the directions the rule has', async (t) => {
  const { repo, alloc } = await policyHive(t);
  const web = alloc.id('k8s:app=web', ns('prod'));
  const client = alloc.id('k8s:app=client', ns('prod'));
  let p = repo.resolve(web);
  t.same(p.entries, [
    { identity: 0, direction: 'ingress', protocol: 0, port: 0, deny: false },
    { identity: 0, direction: 'egress', protocol: 0, port: 0, deny: false },
  ]);
  t.notOk(p.ingressEnforced);
  repo.import(rules({ endpointSelector: { matchLabels: { app: 'web' } }, ingress: [{ fromEndpoints: [{ matchLabels: { app: 'client' } }], toPorts: [{ ports: [{ port: '80', protocol: 'TCP' }] }] }] }));
  p = repo.resolve(web);
  t.ok(p.ingressEnforced);
  t.notOk(p.egressEnforced);
  t.equal(allowedFrom(p.entries, client.id), 'allowed');
  t.equal(allowedFrom(p.entries, client.id, Proto.TCP, 81), 'denied', 'other port: default deny');
  t.equal(allowedFrom(p.entries, client.id, Proto.UDP, 80), 'denied', 'other protocol');
  t.equal(allowedFrom(p.entries, world(alloc).id), 'denied', 'other peer');
  t.equal(allowedTo(p.entries, world(alloc).id, Proto.UDP, 53), 'allowed', 'egress not enforced');
  t.same(p.allowedIngressIdentities, [client.id]);
  t.same(p.allowedEgressIdentities, [0]);
  t.equal(p.revision, repo.revision);
  // an empty ingress rule enforces and allows nothing; enableDefaultDeny:false opts out
  repo.import(rules({ endpointSelector: { matchLabels: { app: 'client' } }, egress: [{}] }));
  t.equal(allowedTo(repo.resolve(client).entries, web.id), 'denied');
  const batch = alloc.id('k8s:app=batch', ns('prod'));
  repo.import(rules({ endpointSelector: { matchLabels: { app: 'batch' } }, enableDefaultDeny: { egress: false }, egressDeny: [{ toEntities: ['world'] }] }));
  p = repo.resolve(batch);
  t.notOk(p.egressEnforced, 'a deny-only rule with enableDefaultDeny.egress=false does not enforce');
  t.equal(allowedTo(p.entries, web.id), 'allowed');
  t.equal(allowedTo(p.entries, world(alloc).id), 'denied', 'the deny still applies over allow-all');
  repo.import(rules({ endpointSelector: { matchLabels: { app: 'batch' } }, egress: [{ toEntities: ['cluster'] }] }));
  t.ok(repo.resolve(batch).egressEnforced, 'any selecting rule that enforces wins');
});


t.test('identities selected by the same rules share one distillation until the rules or the selections change', async (t) => {
  const { repo, alloc } = await policyHive(t);
  repo.import(rules({ endpointSelector: { matchLabels: { tier: 'web' } }, ingress: [{ fromEndpoints: [{ matchLabels: { app: 'client' } }] }] }));
  const a = alloc.id('k8s:tier=web', 'k8s:app=a', ns('prod'));
  const b = alloc.id('k8s:tier=web', 'k8s:app=b', ns('prod'));
  const first = repo.resolve(a);
  t.equal(repo.resolve(b), first, 'a and b are selected by the same rule: one result');
  t.same(first.allowedIngressIdentities, [], 'no client yet');
  const client = alloc.id('k8s:app=client', ns('prod'));
  const after = repo.resolve(b);
  t.not(after, first, 'a new peer identity invalidates the shared result');
  t.same(after.allowedIngressIdentities, [client.id], 'and the new result has the peer');
  repo.import(rules({ endpointSelector: { matchLabels: { app: 'a' } }, egress: [{}] }));
  const ra = repo.resolve(a);
  t.ok(ra.egressEnforced && !repo.resolve(b).egressEnforced, 'a rule set of its own gives a its own result');
  t.equal(ra.revision, repo.revision, 'at the current revision');
});
