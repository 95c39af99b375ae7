// Named ports on egress (Kubernetes `port: http` in an egress rule): resolved against the named
// ports of the DESTINATION endpoints, through the node's named-port map (Cilium's
// NamedPortMultiMap): to a peer identity the numbers its endpoints declare under the name and
// protocol; to the wildcard peer any endpoint's; a name nobody declares allows nothing; a change of
// the map is a policy change of the endpoints whose egress rules use the name.
import t from 'tap';
import { Proto } from '../../src/datapath/types.js';
import { NamedPortMultiMap, NamedPortMapToken, resolveEgressNamedPorts, type NamedPort, type PolicyChange } from '../../src/cells/policy/index.js';
import { lpmVerdict, policyHive, rules } from './helpers.js';

const TCP = Proto.TCP;
const UDP = Proto.UDP;
const port = (name: string, p: number, protocol: number = TCP): NamedPort => ({ name, port: p, protocol });

/** A policy cell with identities client, web, db and other; a rule on client with `egress`; `v` is client -> peer's egress verdict. */
async function fromClient(t: Parameters<typeof policyHive>[0], egress: object[]) {
  const { repo, alloc, h } = await policyHive(t);
  const map = h.get(NamedPortMapToken);
  const ids = { client: alloc.id('k8s:app=client'), web: alloc.id('k8s:app=web'), db: alloc.id('k8s:app=db'), other: alloc.id('k8s:app=other') };
  repo.import(rules({ endpointSelector: { matchLabels: { app: 'client' } }, egress }));
  const v = (peer: keyof typeof ids | number, proto: number, p: number) => lpmVerdict(repo.resolve(ids.client).entries, 'egress', typeof peer === 'number' ? peer : ids[peer].id, proto, p);
  return { repo, map, ids, v };
}

const toApps = (ports: object[]) => ({ toEndpoints: [{ matchExpressions: [{ key: 'app', operator: 'In', values: ['web', 'db', 'other'] }] }], toPorts: [{ ports }] });

t.test('a name with different numbers on two pods: each destination gets its own number, not the other\'s', async (t) => {
  const { map, ids, v } = await fromClient(t, [toApps([{ port: 'http', protocol: 'TCP' }])]);
  map.upsert('endpoint:1', ids.web.id, [port('http', 8080)]);
  map.upsert('endpoint:2', ids.db.id, [port('http', 9090), port('pg', 5432)]);
  t.equal(v('web', TCP, 8080), 'allowed', 'web declares http=8080');
  t.equal(v('web', TCP, 9090), 'denied', 'db\'s number is not allowed to web');
  t.equal(v('db', TCP, 9090), 'allowed', 'db declares http=9090');
  t.equal(v('db', TCP, 8080), 'denied', 'web\'s number is not allowed to db');
  t.equal(v('db', TCP, 5432), 'denied', 'another name of db is not allowed');
  t.equal(v('other', TCP, 8080), 'denied', 'a selected peer that declares no http: nothing');
  t.equal(v('web', UDP, 8080), 'denied', 'another protocol: nothing');
});

t.test('pods of one identity with different numbers for a name: the union of them (the imprecision Cilium has too)', async (t) => {
  const { map, ids, v } = await fromClient(t, [toApps([{ port: 'http', protocol: 'TCP' }])]);
  map.upsert('endpoint:1', ids.web.id, [port('http', 8080)]);
  map.upsert('cep:prod/web-2', ids.web.id, [port('http', 8081)]);
  t.equal(v('web', TCP, 8080), 'allowed');
  t.equal(v('web', TCP, 8081), 'allowed', 'either pod\'s number, to either pod of the identity');
  t.equal(v('web', TCP, 8082), 'denied');
});

t.test('protocol mismatch: a name declared for UDP does not resolve for TCP; ANY resolves each protocol declared', async (t) => {
  const { map, ids, v } = await fromClient(t, [toApps([{ port: 'dns', protocol: 'TCP' }]), { toEndpoints: [{ matchLabels: { app: 'db' } }], toPorts: [{ ports: [{ port: 'metrics' }] }] }]);
  map.upsert('endpoint:1', ids.web.id, [port('dns', 53, UDP)]);
  map.upsert('endpoint:2', ids.db.id, [port('metrics', 9100, UDP), port('metrics', 9101, TCP)]);
  t.equal(v('web', TCP, 53), 'denied', 'dns is UDP on web: the TCP name resolves to nothing');
  t.equal(v('web', UDP, 53), 'denied', 'and the rule asks for TCP only');
  t.equal(v('db', UDP, 9100), 'allowed', 'ANY: metrics/UDP');
  t.equal(v('db', TCP, 9101), 'allowed', 'ANY: metrics/TCP');
  t.equal(v('db', TCP, 9100), 'denied', 'the UDP number is not allowed for TCP');
});

t.test('a name nobody declares allows nothing (never every port); numeric ports beside it do', async (t) => {
  const { repo, map, ids, v } = await fromClient(t, [toApps([{ port: 'nope', protocol: 'TCP' }, { port: '443', protocol: 'TCP' }])]);
  map.upsert('endpoint:1', ids.web.id, [port('http', 8080)]);
  for (const p of [0, 1, 80, 8080, 65535]) t.equal(v('web', TCP, p), 'denied', `port ${p} denied`);
  t.equal(v('web', TCP, 443), 'allowed', 'the numeric port beside it');
  t.ok(repo.resolve(ids.client).egressEnforced, 'the rule still enforces egress');
  t.same(repo.resolve(ids.client).entries.filter((e) => e.direction === 'egress' && e.port !== 443), [], 'no egress entry but the numeric port');
});

t.test('the wildcard peer (an L4-only rule) gets the numbers of every endpoint; a CIDR peer, whose identity no endpoint has, gets none', async (t) => {
  const { repo, map, ids, v } = await fromClient(t, [{ toPorts: [{ ports: [{ port: 'http', protocol: 'TCP' }] }] }, { toCIDR: ['10.9.0.0/16'], toPorts: [{ ports: [{ port: 'pg', protocol: 'TCP' }] }] }]);
  await repo.settled();
  map.upsert('endpoint:1', ids.web.id, [port('http', 8080)]);
  map.upsert('endpoint:2', ids.db.id, [port('http', 9090), port('pg', 5432)]);
  t.equal(v(0, TCP, 8080), 'allowed', 'identity 0: web\'s number');
  t.equal(v(0, TCP, 9090), 'allowed', 'identity 0: db\'s number');
  t.equal(v('other', TCP, 9090), 'allowed', 'so to any peer');
  const cidr = repo.selectors().find((s) => s.selector.includes('10.9.0.0/16'))!.identities[0]!;
  t.equal(v(cidr, TCP, 5432), 'denied', 'the CIDR identity declares no pg');
});

t.test('a deny by name denies the destination\'s number over a wider allow', async (t) => {
  const { repo, alloc, h } = await policyHive(t);
  const map = h.get(NamedPortMapToken);
  const client = alloc.id('k8s:app=client');
  const web = alloc.id('k8s:app=web');
  repo.import(rules({ endpointSelector: { matchLabels: { app: 'client' } }, egress: [{ toEndpoints: [{}] }], egressDeny: [{ toEndpoints: [{ matchLabels: { app: 'web' } }], toPorts: [{ ports: [{ port: 'admin', protocol: 'TCP' }] }] }] }));
  map.upsert('endpoint:1', web.id, [port('admin', 9999)]);
  const v = (p: number) => lpmVerdict(repo.resolve(client).entries, 'egress', web.id, TCP, p);
  t.equal(v(9999), 'denied', 'admin=9999 on web: denied');
  t.equal(v(80), 'allowed', 'the rest allowed');
});

t.test('until every source listed (the map not complete), a deny by name denies every port of its protocol; completion re-resolves', async (t) => {
  const { repo, alloc, h } = await policyHive(t);
  const map = h.get(NamedPortMapToken);
  const client = alloc.id('k8s:app=client');
  const web = alloc.id('k8s:app=web');
  const listed = map.pending('ciliumendpoints');
  t.notOk(map.complete, 'not complete while a source has not listed');
  repo.import(rules({
    endpointSelector: { matchLabels: { app: 'client' } },
    egress: [{ toEndpoints: [{}] }],
    egressDeny: [{ toEndpoints: [{ matchLabels: { app: 'web' } }], toPorts: [{ ports: [{ port: 'admin', protocol: 'TCP' }] }] }],
  }));
  map.upsert('endpoint:1', web.id, [port('admin', 9999)]);
  const v = (proto: number, p: number) => lpmVerdict(repo.resolve(client).entries, 'egress', web.id, proto, p);
  t.equal(v(TCP, 9999), 'denied', 'the known number denied');
  t.equal(v(TCP, 80), 'denied', 'every TCP port denied: another node\'s web pod may call 80 admin');
  t.equal(v(UDP, 80), 'allowed', 'another protocol is not concerned');
  const changes: PolicyChange[] = [];
  const sub = repo.changes$.subscribe((c) => changes.push(c));
  t.teardown(() => sub.unsubscribe());
  listed();
  t.ok(map.complete, 'complete once it listed');
  t.equal(changes.length, 1, 'completion is a policy change');
  t.same([...(changes[0]!.affected as Set<number>)], [client.id], 'of the endpoints whose rules use a name on egress');
  t.equal(v(TCP, 9999), 'denied', 'the number still denied');
  t.equal(v(TCP, 80), 'allowed', 'the rest allowed again');
  listed();
  t.equal(changes.length, 1, 'done twice: nothing more');
});

t.test('a change of the map is a policy change of the endpoints whose egress rules use the name, and re-resolves them', async (t) => {
  const { repo, map, ids, v } = await fromClient(t, [toApps([{ port: 'http', protocol: 'TCP' }])]);
  const changes: PolicyChange[] = [];
  const sub = repo.changes$.subscribe((c) => changes.push(c));
  t.teardown(() => sub.unsubscribe());
  t.equal(v('web', TCP, 8080), 'denied', 'before any endpoint declares http');
  const rev = repo.revision;
  map.upsert('endpoint:1', ids.web.id, [port('http', 8080)]);
  t.equal(changes.length, 1, 'one change');
  t.same([...(changes[0]!.affected as Set<number>)], [ids.client.id], 'it affects the endpoints the rule selects (client), nobody else');
  t.equal(changes[0]!.revision, rev + 1, 'a new revision');
  t.equal(v('web', TCP, 8080), 'allowed', 're-resolved: 8080 allowed');

  map.upsert('endpoint:1', ids.web.id, [port('http', 8080)]);
  t.equal(changes.length, 1, 'the same ports again: no change');
  map.upsert('endpoint:1', ids.web.id, [port('metrics', 9100)]);
  t.equal(changes.length, 2, 'http gone from web: a change');
  t.equal(v('web', TCP, 8080), 'denied', 're-resolved: 8080 no longer allowed');

  map.upsert('endpoint:1', ids.web.id, [port('http', 8080), port('metrics', 9100)]);
  map.upsert('endpoint:1', ids.db.id, [port('http', 8080), port('metrics', 9100)]);
  t.equal(v('web', TCP, 8080), 'denied', 'the endpoint changed identity: web no longer declares it');
  t.equal(v('db', TCP, 8080), 'allowed', '...db does');
  map.remove('endpoint:1');
  t.equal(v('db', TCP, 8080), 'denied', 'the endpoint gone: nothing');
  const n = changes.length;
  map.upsert('endpoint:7', ids.web.id, [port('unused', 1234)]);
  map.remove('endpoint:7');
  t.equal(changes.length, n, 'a name no egress rule uses: no policy change');
});

t.test('NamedPortMultiMap alone: per identity, wildcard, sorted and deduplicated, listeners get the changed names', async (t) => {
  const map = new NamedPortMultiMap();
  const seen: string[][] = [];
  map.onChange((names) => seen.push([...names].sort()));
  map.upsert('a', 10, [port('http', 80), port('http', 8080), port('dns', 53, UDP)]);
  map.upsert('b', 11, [port('http', 80)]);
  map.upsert('c', 12, [port('http', 81)]);
  t.same(map.ports('http', TCP, 10), [80, 8080]);
  t.same(map.ports('http', TCP, 11), [80]);
  t.same(map.ports('http', TCP, 0), [80, 81, 8080], 'wildcard: every endpoint, each number once');
  t.same(map.ports('http', UDP, 0), [], 'no UDP http');
  t.same(map.ports('dns', UDP, 11), [], 'dns is only a\'s');
  t.same(map.ports('nope', TCP, 0), []);
  t.same(seen, [['dns', 'http'], ['http'], ['http']]);
  map.upsert('a', 10, [port('dns', 53, UDP)]);
  t.same(seen.at(-1), ['dns', 'http'], 'a change reports the names of before and after');
  t.equal(map.size, 3);
  map.remove('zzz');
  t.equal(seen.length, 4, 'removing an unknown owner reports nothing');
  t.same(resolveEgressNamedPorts([{ protocol: TCP, port: 0, name: 'http' }, { protocol: TCP, port: 443 }], 12, (n, p, id) => map.ports(n, p, id)), [{ protocol: TCP, port: 81 }, { protocol: TCP, port: 443 }]);
});
