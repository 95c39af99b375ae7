// The repository's two caches behind `resolve` (Cilium's selector-policy cache): by the subject
// selectors that select an identity, the rules they stand for (an identity selected by the same
// subjects as one resolved before is a lookup, not a walk of each rule), and per input (the
// selecting rules, plus the endpoint's named ports when a rule names one) the distillation shared
// by every endpoint with that input. Fail closed: each test changes one input the result depends on
// and checks that the result follows it (a cache key missing an input would keep the old, wider
// result), and that what does not depend on it is still shared.
import t from 'tap';
import { Proto } from '../../src/datapath/types.js';
import { NamedPortMapToken, type NamedPort } from '../../src/cells/policy/index.js';
import { lpmVerdict, policyHive, rules } from './helpers.js';

const TCP = Proto.TCP;
const ns = 'k8s:io.kubernetes.pod.namespace=prod';
const webRule = (port: string) => ({ endpointSelector: { matchLabels: { tier: 'web' } }, ingress: [{ fromEndpoints: [{ matchLabels: { app: 'client' } }], toPorts: [{ ports: [{ port, protocol: 'TCP' }] }] }] });

/** A policy hive whose `rulesFor` is counted (the walk the per-identity cache saves). */
async function counted(t: Parameters<typeof policyHive>[0]) {
  const hive = await policyHive(t);
  const { repo } = hive;
  const walk = repo.rulesFor.bind(repo);
  const calls = { n: 0 };
  repo.rulesFor = (id) => {
    calls.n++;
    return walk(id);
  };
  return { ...hive, calls };
}

/** `counted` with the web rule on port 80, two web identities (a, b) and a client. */
async function webAndClient(t: Parameters<typeof policyHive>[0]) {
  const hive = await counted(t);
  hive.repo.import(rules(webRule('80')));
  const { alloc } = hive;
  return { ...hive, a: alloc.id('k8s:tier=web', 'k8s:app=a', ns), b: alloc.id('k8s:tier=web', 'k8s:app=b', ns), client: alloc.id('k8s:app=client', ns) };
}

t.test('the selecting rules are walked once per set of subject selectors until something changes; identities of the same rules share the result', async (t) => {
  const { repo, calls, a, b, client } = await webAndClient(t);
  const first = repo.resolve(a);
  const walked = calls.n;
  t.equal(repo.resolve(a), first, 'the same identity again: the same result');
  t.equal(calls.n, walked, 'without walking its rules again');
  t.equal(repo.resolve(b), first, 'another identity selected by the same rules: the same result');
  t.equal(calls.n, walked, 'found by its subject selectors, without a walk');
  t.equal(lpmVerdict(first.entries, 'ingress', client.id, TCP, 80), 'allowed');
  t.equal(lpmVerdict(first.entries, 'ingress', client.id, TCP, 81), 'denied');
});

t.test('a rule selecting one identity only: that identity gets its own result, the other keeps the shared one', async (t) => {
  const { repo, alloc, calls, a, b, client } = await webAndClient(t);
  const shared = repo.resolve(a);
  t.equal(repo.resolve(b), shared);
  repo.import(rules({ endpointSelector: { matchLabels: { app: 'a' } }, ingressDeny: [{ fromEndpoints: [{ matchLabels: { app: 'client' } }] }] }));
  const before = calls.n;
  const ra = repo.resolve(a);
  t.ok(calls.n > before, 'the rule change makes the rules of a walked again');
  t.equal(lpmVerdict(ra.entries, 'ingress', client.id, TCP, 80), 'denied', 'a: the deny of its own rule holds');
  const rb = repo.resolve(b);
  t.not(rb, ra, 'b is not selected by it: not a\'s result');
  t.equal(lpmVerdict(rb.entries, 'ingress', client.id, TCP, 80), 'allowed', 'b: still allowed');
  repo.delete('all');
  const after = repo.resolve(a);
  t.notOk(after.ingressEnforced, 'every rule deleted: nothing enforced for a');
  t.equal(lpmVerdict(after.entries, 'ingress', alloc.id('k8s:app=other', ns).id, TCP, 9), 'allowed', 'allow-all again, not a cached enforcement');
});

t.test('a rule replaced under the same labels: a new result for the same identity', async (t) => {
  const { repo, alloc } = await policyHive(t);
  const labelled = (port: string) => rules({ ...webRule(port), labels: [{ key: 'name', value: 'web', source: 'k8s' }] });
  repo.import(labelled('80'));
  const a = alloc.id('k8s:tier=web', ns);
  const client = alloc.id('k8s:app=client', ns);
  const first = repo.resolve(a);
  t.equal(lpmVerdict(first.entries, 'ingress', client.id, TCP, 80), 'allowed');
  repo.import(labelled('81'));
  const second = repo.resolve(a);
  t.equal(lpmVerdict(second.entries, 'ingress', client.id, TCP, 80), 'denied', 'the replaced rule\'s port is no longer allowed');
  t.equal(lpmVerdict(second.entries, 'ingress', client.id, TCP, 81), 'allowed', 'the new one is');
});

t.test('a new peer identity, and one that no selector selects: results follow, identities unknown to the selector cache too', async (t) => {
  const { repo, alloc } = await policyHive(t);
  repo.import(rules(webRule('80')));
  const a = alloc.id('k8s:tier=web', ns);
  const first = repo.resolve(a);
  t.same(first.allowedIngressIdentities, [], 'no client yet');
  alloc.id('k8s:app=unrelated', ns);
  t.equal(repo.resolve(a), first, 'an identity no selector selects changes nothing (the result is still shared)');
  const client = alloc.id('k8s:app=client', ns);
  const second = repo.resolve(a);
  t.same(second.allowedIngressIdentities, [client.id], 'the new peer is allowed');
  await alloc.release(client.id);
  t.same(repo.resolve(a).allowedIngressIdentities, [], 'and gone with its identity');
  // an identity object the selector cache never saw (labels it does not know under that number): the rules are found by matching
  const x = alloc.id('k8s:app=x', ns);
  const stranger = { ...a, labels: x.labels, labelSet: x.labelSet };
  t.notOk(repo.resolve(stranger).ingressEnforced, 'other labels under a known number: not the web rules');
});

t.test('ingress named ports: part of the key only when a selecting rule names one; another number, another result', async (t) => {
  const { repo, alloc } = await policyHive(t);
  repo.import(rules(webRule('http')));
  const a = alloc.id('k8s:tier=web', 'k8s:app=a', ns);
  const b = alloc.id('k8s:tier=web', 'k8s:app=b', ns);
  const client = alloc.id('k8s:app=client', ns);
  const http = (port: number): NamedPort => ({ name: 'http', port, protocol: TCP });
  const ra = repo.resolve(a, [http(8080)]);
  const rb = repo.resolve(b, [http(9090)]);
  t.not(rb, ra, 'the same rules, different numbers for the name: not shared');
  t.equal(lpmVerdict(ra.entries, 'ingress', client.id, TCP, 9090), 'denied', 'a does not allow b\'s number');
  t.equal(lpmVerdict(rb.entries, 'ingress', client.id, TCP, 9090), 'allowed');
  t.equal(lpmVerdict(repo.resolve(a, []).entries, 'ingress', client.id, TCP, 8080), 'denied', 'the same identity without the name: nothing allowed');
  t.equal(repo.resolve(b, [http(8080)]), ra, 'the same rules and the same number: shared across identities');
});

t.test('egress named ports: a change of the node\'s named-port map changes the result of the same identity', async (t) => {
  const { repo, alloc, h } = await policyHive(t);
  const map = h.get(NamedPortMapToken);
  const client = alloc.id('k8s:app=client', ns);
  const web = alloc.id('k8s:app=web', ns);
  repo.import(rules({ endpointSelector: { matchLabels: { app: 'client' } }, egress: [{ toEndpoints: [{ matchLabels: { app: 'web' } }], toPorts: [{ ports: [{ port: 'http', protocol: 'TCP' }] }] }] }));
  map.upsert('endpoint:1', web.id, [{ name: 'http', port: 8080, protocol: TCP }]);
  const first = repo.resolve(client);
  t.equal(lpmVerdict(first.entries, 'egress', web.id, TCP, 8080), 'allowed');
  map.upsert('endpoint:1', web.id, [{ name: 'http', port: 8081, protocol: TCP }]);
  const second = repo.resolve(client);
  t.equal(lpmVerdict(second.entries, 'egress', web.id, TCP, 8080), 'denied', 'the old number is no longer allowed');
  t.equal(lpmVerdict(second.entries, 'egress', web.id, TCP, 8081), 'allowed', 'the new one is');
});
