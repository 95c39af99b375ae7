import t from 'tap';
import { Proto } from '../../src/datapath/types.js';
import type { PolicyChange } from '../../src/cells/policy/index.js';
import { policyHive, rules, lpmVerdict } from './helpers.js';

const web = { endpointSelector: { matchLabels: { app: 'web' } }, ingress: [{ fromEndpoints: [{ matchLabels: { app: 'client' } }] }] };

t.test('revision starts at 1 and bumps on every change; changes report affected identities and are emitted', async (t) => {
  const { repo, alloc } = await policyHive(t);
  const w = alloc.id('k8s:app=web');
  const db = alloc.id('k8s:app=db');
  const seen: PolicyChange[] = [];
  repo.changes$.subscribe((c) => seen.push(c));
  t.equal(repo.revision, 1);
  const c1 = repo.import(rules({ ...web, labels: ['k8s:rule=web'] }));
  t.equal(c1.revision, 2);
  t.same([...(c1.affected as Set<number>)], [w.id]);
  t.equal(c1.rules, 1);
  const c2 = repo.import(rules({ endpointSelector: { matchLabels: { app: 'db' } }, ingress: [{}], labels: ['k8s:rule=db'] }));
  t.same([...(c2.affected as Set<number>)], [db.id]);
  t.equal(repo.revision, 3);
  const c3 = repo.import(rules({ ...web, endpointSelector: { matchLabels: { app: 'db' } }, labels: ['k8s:rule=web'] }));
  t.same([...(c3.affected as Set<number>)].sort(), [w.id, db.id].sort(), 'replacing by labels affects the old and the new subjects');
  t.equal(c3.deleted, 1);
  t.equal(repo.get().length, 2);
  const c4 = repo.delete(['k8s:rule=db']);
  t.same([...(c4.affected as Set<number>)], [db.id]);
  t.equal(c4.deleted, 1);
  const none = repo.delete(['k8s:rule=nothing']);
  t.equal(none.deleted, 0);
  t.equal(none.revision, 5, 'deleting nothing is not a change');
  t.same(seen.map((c) => c.revision), [2, 3, 4, 5]);
  t.same(repo.get(['rule=web']).map((r) => r.labels), [['k8s:rule=web']], 'a filter label without source matches any source');
  t.equal(repo.delete('all').revision, 6);
  t.same(repo.get(), []);
  t.throws(() => repo.delete(['=bad']), /at \/labels: invalid label/);
});

t.test('SelectorCache is incremental: a new identity is matched against cached selectors and its peers are told', async (t) => {
  const { repo, alloc } = await policyHive(t);
  const w = alloc.id('k8s:app=web');
  repo.import(rules(web));
  t.same(repo.resolve(w).allowedIngressIdentities, []);
  const seen: PolicyChange[] = [];
  repo.changes$.subscribe((c) => seen.push(c));
  const rev = repo.revision;
  const client = alloc.id('k8s:app=client', 'k8s:pod=1');
  t.equal(seen.length, 1, 'a change was emitted for the new peer identity');
  t.same([...(seen[0]!.affected as Set<number>)], [w.id], 'the endpoints whose rules select it as a peer are affected');
  t.equal(repo.revision, rev + 1);
  t.same(repo.resolve(w).allowedIngressIdentities, [client.id]);
  const w2 = alloc.id('k8s:app=web', 'k8s:pod=2');
  t.same([...(seen[1]!.affected as Set<number>)], [w2.id], 'a new identity selected by a subject selector is affected itself');
  t.ok(repo.resolve(w2).ingressEnforced);
  alloc.id('k8s:app=unrelated');
  t.equal(seen.length, 2, 'an identity no selector selects changes nothing');
  await alloc.release(client.id);
  t.same(repo.resolve(w).allowedIngressIdentities, [], 'deleted identities leave the cache');
  const sel = repo.selectors().find((s) => s.selector === 'any:app=client')!;
  t.same(sel, { selector: 'any:app=client', identities: [], users: 1 });
});

t.test('resolve finds rules through the selector index, and also for identities the cache does not know', async (t) => {
  const { repo, alloc } = await policyHive(t);
  repo.import(rules(web));
  const known = alloc.id('k8s:app=web');
  const adhoc = { id: 9999, labels: ['k8s:app=web'], labelSet: [{ source: 'k8s', key: 'app', value: 'web' }], reserved: false };
  t.ok(repo.resolve(known).ingressEnforced);
  t.ok(repo.resolve(adhoc).ingressEnforced);
  t.same(repo.rulesFor(adhoc).length, 1);
});

/** A trace direction's verdict, enforcement and deciding rules (without what was considered). */
const pick = (d: { verdict: string; enforced: boolean; rules: readonly string[] }) => ({ verdict: d.verdict, enforced: d.enforced, rules: d.rules });

t.test('trace: verdict, deciding rules and a readable log', async (t) => {
  const { repo, alloc } = await policyHive(t);
  const w = alloc.id('k8s:app=web');
  const c = alloc.id('k8s:app=client');
  repo.import(rules(
    { endpointSelector: { matchLabels: { app: 'web' } }, ingress: [{ fromEndpoints: [{ matchLabels: { app: 'client' } }], toPorts: [{ ports: [{ port: '80', protocol: 'TCP' }] }] }], labels: ['k8s:name=allow-client'] },
    { endpointSelector: { matchLabels: { app: 'web' } }, ingressDeny: [{ fromEntities: ['world'] }], labels: ['k8s:name=deny-world'] },
  ));
  const ok = repo.trace({ labels: ['k8s:app=client'] }, { identity: w.id }, 80, 'TCP');
  t.equal(ok.verdict, 'allowed');
  t.same(pick(ok.ingress), { verdict: 'allowed', enforced: true, rules: ['[k8s:name=allow-client]'] });
  t.same(pick(ok.egress), { verdict: 'allowed', enforced: false, rules: [] });
  t.same(ok.ingress.selecting, ['[k8s:name=allow-client]', '[k8s:name=deny-world]'], 'the rules selecting the destination');
  t.match(ok.ingress.sections, [{ rule: '[k8s:name=allow-client]', pointer: '/0/ingress/0', peerMatches: true, portMatches: true }, { rule: '[k8s:name=deny-world]', deny: true, peerMatches: false }], 'each section with what matched');
  t.match(ok.log.join('\n'), /Tracing From: identity \d+ \[k8s:app=client\] => To: identity \d+ \[k8s:app=web\] Ports: \[80\/TCP\]/);
  t.match(ok.log.join('\n'), /\/0\/ingress\/0: allows from \[any:app=client\] on 80\/TCP: MATCH/);
  t.match(ok.log.join('\n'), /Final verdict: ALLOWED/);
  const port = repo.trace({ identity: c.id }, { identity: w.id }, 443, 'TCP');
  t.equal(port.verdict, 'denied');
  t.match(port.log.join('\n'), /Ingress verdict: denied \(default deny: no rule allows it\)/);
  const denied = repo.trace({ labels: ['reserved:world'] }, { labels: ['k8s:app=web'] }, 80, 'TCP');
  t.same(denied.ingress.rules, ['[k8s:name=deny-world]']);
  t.match(denied.log.join('\n'), /a deny rule matches/);
  const unknownPeer = repo.trace({ labels: ['k8s:app=stranger'] }, { labels: ['k8s:app=web'] }, 80, 'udp');
  t.equal(unknownPeer.verdict, 'denied', 'label sets without an identity are traced too');
  t.throws(() => repo.trace({ identity: 123456 }, { identity: w.id }, 80, 'TCP'), /\/src\/identity: identity 123456 is not known/);
  t.throws(() => repo.trace({ identity: c.id }, { identity: w.id }, 80, 'HTTP'), /unknown protocol "HTTP"/);
  t.throws(() => repo.trace({ identity: c.id }, { identity: w.id }, 70000, 'TCP'), /\/dport/);
  // the trace agrees with the map state
  const { entries } = repo.resolve(w);
  t.equal(lpmVerdict(entries, 'ingress', c.id, Proto.TCP, 80), 'allowed');
  t.equal(lpmVerdict(entries, 'ingress', 2, Proto.TCP, 80), 'denied');
});

t.test('batch: imports and deletes as one change (one revision, one event), each acting on the rules before it; a bad change changes nothing', async (t) => {
  const { repo, alloc } = await policyHive(t);
  const w = alloc.id('k8s:app=web');
  const db = alloc.id('k8s:app=db');
  repo.import(rules({ ...web, labels: ['k8s:obj=a', 'k8s:kind=x'] }));
  repo.import(rules({ endpointSelector: { matchLabels: { app: 'db' } }, ingress: [{}], labels: ['k8s:obj=b', 'k8s:kind=x'] }));
  const seen: PolicyChange[] = [];
  repo.changes$.subscribe((c) => seen.push(c));
  const before = repo.revision;
  const c = repo.batch([
    { import: rules({ ...web, ingress: [{}], labels: ['k8s:obj=a', 'k8s:kind=x', 'k8s:v=2'] }), replaceWithLabels: ['k8s:obj=a'] },
    { import: rules({ endpointSelector: { matchLabels: { app: 'db' } }, ingress: [{}], labels: ['k8s:obj=c'] }) },
    { delete: ['k8s:obj=b'] },
    { delete: ['k8s:obj=none'] },
  ]);
  t.equal(c.revision, before + 1, 'one revision');
  t.same(seen.map((s) => s.revision), [before + 1], 'one change event');
  t.match(c, { added: 2, deleted: 2, rules: 2 });
  t.same([...(c.affected as Set<number>)].sort(), [w.id, db.id].sort(), 'the identities of every part');
  t.same(repo.get().map((r) => r.labels).sort(), [['k8s:kind=x', 'k8s:obj=a', 'k8s:v=2'], ['k8s:obj=c']], 'a replaced by its new version, b deleted, c added');

  const rev = repo.revision;
  t.throws(() => repo.batch([{ delete: ['k8s:obj=c'] }, { import: '[{"endpointSelector":{},"ingress":[{"toPorts":[{"ports":[{"port":"99999"}]}]}]}]' }]), /port/);
  t.equal(repo.revision, rev, 'a bad change: no revision');
  t.equal(repo.get(['k8s:obj=c']).length, 1, 'and nothing of the batch applied');
  t.same(repo.batch([]), { revision: rev, affected: new Set(), rules: 2, added: 0, deleted: 0 }, 'an empty batch changes nothing');
});
