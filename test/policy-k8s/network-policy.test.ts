/**
 * NetworkPolicy translation, checked by what the real policy repository makes of it: each case is
 * translated, imported, and resolved for sample pod, world and CIDR identities; the verdicts come
 * from the datapath's own LPM lookup over the resolved map state.
 */
import t from 'tap';
import { Proto, ReservedIdentity, type Direction } from '../../src/datapath/types.js';
import type { Identity } from '../../src/cells/identity/index.js';
import { NamedPortMapToken, PolicyError } from '../../src/cells/policy/index.js';
import { translateNetworkPolicy, type NetworkPolicy } from '../../src/cells/policy-k8s/index.js';
import type { TestLike } from '../../src/hive/index.js';
import { lpmVerdict, policyHive, type MockAllocator } from '../policy/helpers.js';

const NS_LABEL = 'k8s:io.kubernetes.pod.namespace';
const pod = (alloc: MockAllocator, app: string, ns: string, team: string) =>
  alloc.id(`k8s:app=${app}`, `${NS_LABEL}=${ns}`, `k8s:io.cilium.k8s.namespace.labels.team=${team}`, `k8s:io.cilium.k8s.namespace.labels.kubernetes.io/metadata.name=${ns}`);

/** The sample cluster: pods in prod (team a), dev (team b), mon (team ops); world, host and CIDR identities. */
async function cluster(t: TestLike) {
  const { repo, alloc, h } = await policyHive(t);
  const ids: Record<string, Identity> = {
    web: pod(alloc, 'web', 'prod', 'a'),
    db: pod(alloc, 'db', 'prod', 'a'),
    client: pod(alloc, 'client', 'prod', 'a'),
    devClient: pod(alloc, 'client', 'dev', 'b'),
    devOther: pod(alloc, 'other', 'dev', 'b'),
    prom: pod(alloc, 'prom', 'mon', 'ops'),
    world: alloc.lookup(ReservedIdentity.world)!,
    host: alloc.lookup(ReservedIdentity.host)!,
    net10_2: await alloc.allocateCIDR('10.2.0.0/16'),
    net10_1_2: await alloc.allocateCIDR('10.1.2.0/24'),
    net192: await alloc.allocateCIDR('192.168.0.0/16'),
  };
  return { repo, alloc, ids, namedPorts: h.get(NamedPortMapToken) };
}

const np = (spec: object, name = 'np', namespace = 'prod'): NetworkPolicy => ({ apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name, namespace, uid: `uid-${name}` }, spec }) as NetworkPolicy;
const all = { podSelector: {} };

/** [subject, direction, peer, protocol, port, verdict] */
type Check = [string, Direction, string, number, number, 'allowed' | 'denied'];
const TCP = Proto.TCP;
const UDP = Proto.UDP;

const cases: { name: string; policy: NetworkPolicy; checks: Check[]; warnings?: number }[] = [
  {
    name: 'policyTypes [Ingress] with no rules: ingress default deny, egress untouched',
    policy: np({ ...all, policyTypes: ['Ingress'] }),
    checks: [['web', 'ingress', 'client', TCP, 80, 'denied'], ['web', 'ingress', 'world', TCP, 80, 'denied'], ['web', 'egress', 'world', TCP, 443, 'allowed'], ['devOther', 'ingress', 'world', TCP, 80, 'allowed']],
  },
  {
    name: 'policyTypes [Egress] with no rules: egress default deny, ingress untouched',
    policy: np({ ...all, policyTypes: ['Egress'] }),
    checks: [['web', 'egress', 'db', TCP, 5432, 'denied'], ['web', 'ingress', 'world', TCP, 80, 'allowed']],
  },
  {
    name: 'no policyTypes: Ingress always, Egress because there are egress rules',
    policy: np({ ...all, egress: [{ to: [{ podSelector: { matchLabels: { app: 'db' } } }] }] }),
    checks: [['web', 'ingress', 'client', TCP, 80, 'denied'], ['web', 'egress', 'db', TCP, 5432, 'allowed'], ['web', 'egress', 'world', TCP, 443, 'denied']],
  },
  {
    name: 'no policyTypes and no egress rules: egress not enforced',
    policy: np({ podSelector: { matchLabels: { app: 'web' } }, ingress: [{ from: [{ podSelector: { matchLabels: { app: 'client' } } }] }] }),
    checks: [['web', 'egress', 'world', TCP, 443, 'allowed'], ['web', 'ingress', 'client', TCP, 80, 'allowed'], ['web', 'ingress', 'db', TCP, 80, 'denied'], ['db', 'ingress', 'world', TCP, 80, 'allowed']],
  },
  {
    name: 'policyTypes [Egress] ignores ingress rules (and does not enforce ingress)',
    policy: np({ ...all, policyTypes: ['Egress'], ingress: [{ from: [{ podSelector: {} }] }] }),
    checks: [['web', 'ingress', 'world', TCP, 80, 'allowed'], ['web', 'egress', 'client', TCP, 80, 'denied']],
    warnings: 1,
  },
  {
    name: 'spec.podSelector selects only pods of the policy namespace',
    policy: np({ podSelector: { matchLabels: { app: 'client' } }, policyTypes: ['Ingress'] }),
    checks: [['client', 'ingress', 'web', TCP, 80, 'denied'], ['devClient', 'ingress', 'web', TCP, 80, 'allowed'], ['web', 'ingress', 'world', TCP, 80, 'allowed']],
  },
  {
    name: 'peer podSelector alone: pods of the same namespace only',
    policy: np({ ...all, ingress: [{ from: [{ podSelector: { matchLabels: { app: 'client' } } }] }] }),
    checks: [['web', 'ingress', 'client', TCP, 80, 'allowed'], ['web', 'ingress', 'devClient', TCP, 80, 'denied'], ['web', 'ingress', 'world', TCP, 80, 'denied']],
  },
  {
    name: 'peer podSelector {}: every pod of the namespace, nothing else',
    policy: np({ ...all, ingress: [{ from: [{ podSelector: {} }] }] }),
    checks: [['web', 'ingress', 'db', TCP, 80, 'allowed'], ['web', 'ingress', 'devOther', TCP, 80, 'denied'], ['web', 'ingress', 'host', TCP, 80, 'denied'], ['web', 'ingress', 'world', TCP, 80, 'denied']],
  },
  {
    name: 'namespaceSelector alone: every pod of the namespaces with those labels',
    policy: np({ ...all, ingress: [{ from: [{ namespaceSelector: { matchLabels: { team: 'b' } } }] }] }),
    checks: [['web', 'ingress', 'devOther', TCP, 80, 'allowed'], ['web', 'ingress', 'devClient', TCP, 80, 'allowed'], ['web', 'ingress', 'client', TCP, 80, 'denied'], ['web', 'ingress', 'world', TCP, 80, 'denied']],
  },
  {
    name: 'empty namespaceSelector: pods of every namespace, not world or host',
    policy: np({ ...all, ingress: [{ from: [{ namespaceSelector: {} }] }] }),
    checks: [['web', 'ingress', 'prom', TCP, 80, 'allowed'], ['web', 'ingress', 'devOther', TCP, 80, 'allowed'], ['web', 'ingress', 'world', TCP, 80, 'denied'], ['web', 'ingress', 'host', TCP, 80, 'denied'], ['web', 'ingress', 'net192', TCP, 80, 'denied']],
  },
  {
    name: 'namespaceSelector NotIn selects pods only (never world)',
    policy: np({ ...all, ingress: [{ from: [{ namespaceSelector: { matchExpressions: [{ key: 'team', operator: 'NotIn', values: ['a'] }] } }] }] }),
    checks: [['web', 'ingress', 'prom', TCP, 80, 'allowed'], ['web', 'ingress', 'client', TCP, 80, 'denied'], ['web', 'ingress', 'world', TCP, 80, 'denied'], ['web', 'ingress', 'host', TCP, 80, 'denied']],
  },
  {
    name: 'namespaceSelector on kubernetes.io/metadata.name (a key with a prefix and a slash)',
    policy: np({ ...all, ingress: [{ from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'mon' } } }] }] }),
    checks: [['web', 'ingress', 'prom', TCP, 80, 'allowed'], ['web', 'ingress', 'devOther', TCP, 80, 'denied'], ['web', 'ingress', 'client', TCP, 80, 'denied']],
  },
  {
    name: 'namespaceSelector and podSelector in one peer: both must hold',
    policy: np({ ...all, ingress: [{ from: [{ namespaceSelector: { matchLabels: { team: 'b' } }, podSelector: { matchLabels: { app: 'client' } } }] }] }),
    checks: [['web', 'ingress', 'devClient', TCP, 80, 'allowed'], ['web', 'ingress', 'devOther', TCP, 80, 'denied'], ['web', 'ingress', 'client', TCP, 80, 'denied']],
  },
  {
    name: 'the same selectors as two peers: either one',
    policy: np({ ...all, ingress: [{ from: [{ namespaceSelector: { matchLabels: { team: 'b' } } }, { podSelector: { matchLabels: { app: 'client' } } }] }] }),
    checks: [['web', 'ingress', 'devOther', TCP, 80, 'allowed'], ['web', 'ingress', 'client', TCP, 80, 'allowed'], ['web', 'ingress', 'db', TCP, 80, 'denied'], ['web', 'ingress', 'prom', TCP, 80, 'denied']],
  },
  {
    name: '`from` absent: every source (world included), on the rule ports',
    policy: np({ ...all, ingress: [{ ports: [{ port: 80 }] }] }),
    checks: [['web', 'ingress', 'world', TCP, 80, 'allowed'], ['web', 'ingress', 'prom', TCP, 80, 'allowed'], ['web', 'ingress', 'world', TCP, 81, 'denied'], ['web', 'ingress', 'world', UDP, 80, 'denied']],
  },
  {
    name: '`from: []`: every source as well',
    policy: np({ ...all, ingress: [{ from: [], ports: [{ port: 80 }] }] }),
    checks: [['web', 'ingress', 'world', TCP, 80, 'allowed'], ['web', 'ingress', 'world', TCP, 81, 'denied']],
  },
  {
    name: 'ingress [{}]: everything from everywhere',
    policy: np({ ...all, ingress: [{}] }),
    checks: [['web', 'ingress', 'world', UDP, 53, 'allowed'], ['web', 'ingress', 'devOther', TCP, 9999, 'allowed']],
  },
  {
    name: 'ingress []: default deny',
    policy: np({ ...all, ingress: [] }),
    checks: [['web', 'ingress', 'db', TCP, 80, 'denied']],
  },
  {
    name: 'ipBlock with except (egress)',
    policy: np({ ...all, policyTypes: ['Egress'], egress: [{ to: [{ ipBlock: { cidr: '10.0.0.0/8', except: ['10.1.0.0/16'] } }] }] }),
    checks: [['web', 'egress', 'net10_2', TCP, 443, 'allowed'], ['web', 'egress', 'net10_1_2', TCP, 443, 'denied'], ['web', 'egress', 'except', TCP, 443, 'denied'], ['web', 'egress', 'outer', TCP, 443, 'allowed'], ['web', 'egress', 'world', TCP, 443, 'denied'], ['web', 'egress', 'net192', TCP, 443, 'denied'], ['web', 'egress', 'db', TCP, 443, 'denied']],
  },
  {
    name: 'ipBlock 0.0.0.0/0 except a private range: world yes, the range no',
    policy: np({ ...all, policyTypes: ['Egress'], egress: [{ to: [{ ipBlock: { cidr: '0.0.0.0/0', except: ['10.0.0.0/8'] } }] }] }),
    checks: [['web', 'egress', 'world', TCP, 443, 'allowed'], ['web', 'egress', 'net192', TCP, 443, 'allowed'], ['web', 'egress', 'net10_2', TCP, 443, 'denied'], ['web', 'egress', 'except', TCP, 443, 'denied']],
  },
  {
    name: 'ports: protocol defaults to TCP; UDP; no port = every port of the protocol',
    policy: np({ ...all, ingress: [{ ports: [{ port: 5432 }, { protocol: 'UDP', port: 53 }, { protocol: 'SCTP' }] }] }),
    checks: [['db', 'ingress', 'web', TCP, 5432, 'allowed'], ['db', 'ingress', 'web', UDP, 5432, 'denied'], ['db', 'ingress', 'web', UDP, 53, 'allowed'], ['db', 'ingress', 'web', TCP, 53, 'denied'], ['db', 'ingress', 'web', Proto.SCTP, 7777, 'allowed']],
  },
  {
    name: 'endPort: a port range',
    policy: np({ ...all, ingress: [{ ports: [{ port: 8000, endPort: 8080 }] }] }),
    checks: [['web', 'ingress', 'client', TCP, 8000, 'allowed'], ['web', 'ingress', 'client', TCP, 8042, 'allowed'], ['web', 'ingress', 'client', TCP, 8080, 'allowed'], ['web', 'ingress', 'client', TCP, 7999, 'denied'], ['web', 'ingress', 'client', TCP, 8081, 'denied'], ['web', 'ingress', 'client', UDP, 8042, 'denied']],
  },
  {
    name: 'named ingress ports allow nothing on a pod that declares none; numeric ports beside them do; a named egress port nobody declares allows nothing',
    policy: np({ ...all, ingress: [{ ports: [{ port: 'http' }, { port: 443 }] }, { from: [{ podSelector: {} }], ports: [{ port: 'metrics' }] }], egress: [{ ports: [{ port: 'dns', protocol: 'UDP' }] }] }),
    checks: [
      ['web', 'ingress', 'client', TCP, 443, 'allowed'], ['web', 'ingress', 'client', TCP, 80, 'denied'], ['web', 'ingress', 'client', TCP, 9090, 'denied'], ['web', 'ingress', 'client', TCP, 0, 'denied'],
      ['web', 'egress', 'world', UDP, 53, 'denied'], ['web', 'egress', 'db', UDP, 53, 'denied'], ['web', 'egress', 'db', UDP, 0, 'denied'],
    ],
  },
];

for (const c of cases) {
  t.test(c.name, async (t) => {
    const { repo, alloc, ids } = await cluster(t);
    const tr = translateNetworkPolicy(c.policy);
    t.equal(tr.warnings.length, c.warnings ?? 0, `warnings: ${tr.warnings.join('; ')}`);
    repo.import(JSON.stringify(tr.rules));
    await repo.settled();
    ids.except = alloc.lookupByLabels([{ source: 'cidr', key: '10.1.0.0/16', value: '' }, { source: 'reserved', key: 'world', value: '' }]) ?? alloc.lookupByLabels([{ source: 'cidr', key: '10.0.0.0/8', value: '' }, { source: 'reserved', key: 'world', value: '' }])!;
    ids.outer = alloc.lookupByLabels([{ source: 'cidr', key: '10.0.0.0/8', value: '' }, { source: 'reserved', key: 'world', value: '' }])!;
    for (const [subject, dir, peer, proto, port, want] of c.checks) {
      t.ok(ids[peer], `identity ${peer} exists`);
      t.equal(lpmVerdict(repo.resolve(ids[subject]!).entries, dir, ids[peer]!.id, proto, port), want, `${subject} ${dir} ${dir === 'ingress' ? 'from' : 'to'} ${peer} ${proto}/${port}: ${want}`);
    }
  });
}

t.test('a named ingress port allows, on each selected pod, the number that pod declares under the name', async (t) => {
  const { repo, ids } = await cluster(t);
  const tr = translateNetworkPolicy(np({ ...all, ingress: [{ from: [{ podSelector: { matchLabels: { app: 'client' } } }], ports: [{ port: 'http' }, { port: 'dns', protocol: 'UDP' }] }] }));
  t.same(tr.warnings, []);
  t.same((tr.rules[0]!.ingress as { toPorts: unknown }[])[0]!.toPorts, [{ ports: [{ port: 'http', protocol: 'TCP' }, { port: 'dns', protocol: 'UDP' }] }], 'the names go to the rule');
  repo.import(JSON.stringify(tr.rules));
  const v = (named: { name: string; port: number; protocol: number }[], proto: number, port: number) => lpmVerdict(repo.resolve(ids.web!, named).entries, 'ingress', ids.client!.id, proto, port);
  t.equal(v([{ name: 'http', port: 8080, protocol: TCP }], TCP, 8080), 'allowed', 'http=8080 on this pod');
  t.equal(v([{ name: 'http', port: 8080, protocol: TCP }], TCP, 80), 'denied', 'not another port');
  t.equal(v([{ name: 'http', port: 9000, protocol: TCP }], TCP, 9000), 'allowed', 'another pod (or a new one under the name) with http=9000');
  t.equal(v([{ name: 'http', port: 9000, protocol: TCP }], TCP, 8080), 'denied', '...and not 8080 there');
  t.equal(v([{ name: 'dns', port: 53, protocol: UDP }], UDP, 53), 'allowed', 'dns/UDP');
  t.equal(v([{ name: 'dns', port: 53, protocol: TCP }], UDP, 53), 'denied', 'dns declared for TCP: the UDP name does not match');
  t.equal(v([], TCP, 8080), 'denied', 'a pod that declares no name: nothing');
  t.equal(lpmVerdict(repo.resolve(ids.web!, [{ name: 'http', port: 8080, protocol: TCP }]).entries, 'ingress', ids.world!.id, TCP, 8080), 'denied', 'only from the selected peers');
  const badName = t.throws(() => translateNetworkPolicy(np({ ...all, ingress: [{ ports: [{ port: 'HTTP' }] }] }))) as unknown as PolicyError;
  t.equal(badName.pointer, '/spec/ingress/0/ports/0/port', 'an invalid name is refused naming the field');
  const range = t.throws(() => translateNetworkPolicy(np({ ...all, ingress: [{ ports: [{ port: 'http', endPort: 90 }] }] }))) as unknown as PolicyError;
  t.equal(range.pointer, '/spec/ingress/0/ports/0/endPort', 'endPort with a name is refused');
});

t.test('a named egress port allows, to each destination pod, the number that pod declares under the name', async (t) => {
  const { repo, ids, namedPorts } = await cluster(t);
  const tr = translateNetworkPolicy(np({ podSelector: { matchLabels: { app: 'client' } }, policyTypes: ['Egress'], egress: [{ to: [{ podSelector: {} }], ports: [{ port: 'http' }, { port: 'dns', protocol: 'UDP' }] }] }));
  t.same(tr.warnings, [], 'no warning: named egress ports are supported');
  t.same((tr.rules[0]!.egress as { toPorts: unknown }[])[0]!.toPorts, [{ ports: [{ port: 'http', protocol: 'TCP' }, { port: 'dns', protocol: 'UDP' }] }], 'the names go to the rule');
  repo.import(JSON.stringify(tr.rules));
  namedPorts.upsert('endpoint:1', ids.web!.id, [{ name: 'http', port: 8080, protocol: TCP }]);
  namedPorts.upsert('endpoint:2', ids.db!.id, [{ name: 'http', port: 9090, protocol: TCP }, { name: 'dns', port: 53, protocol: TCP }]);
  namedPorts.upsert('endpoint:3', ids.devOther!.id, [{ name: 'http', port: 7070, protocol: TCP }]);
  const v = (peer: string, proto: number, port: number) => lpmVerdict(repo.resolve(ids.client!).entries, 'egress', ids[peer]!.id, proto, port);
  t.equal(v('web', TCP, 8080), 'allowed', 'web: http=8080');
  t.equal(v('web', TCP, 9090), 'denied', 'web: not db\'s number');
  t.equal(v('db', TCP, 9090), 'allowed', 'db: http=9090');
  t.equal(v('db', TCP, 8080), 'denied', 'db: not web\'s number');
  t.equal(v('db', UDP, 53), 'denied', 'dns is TCP on db: the UDP name resolves to nothing');
  t.equal(v('devOther', TCP, 7070), 'denied', 'a pod of another namespace is not a peer');
  t.equal(v('world', TCP, 8080), 'denied', 'nor the world');
  const range = t.throws(() => translateNetworkPolicy(np({ ...all, policyTypes: ['Egress'], egress: [{ ports: [{ port: 'http', endPort: 90 }] }] }))) as unknown as PolicyError;
  t.equal(range.pointer, '/spec/egress/0/ports/0/endPort', 'endPort with a named egress port is refused naming the field');
  t.match(range.message, /endPort with a named port.*fix: give port as a number, or drop endPort/);
});

t.test('every rule carries its origin; get, replace and delete by origin labels', async (t) => {
  const { repo, ids } = await cluster(t);
  const first = translateNetworkPolicy(np({ ...all, policyTypes: ['Ingress'] }, 'lockdown'));
  t.same(first.origin, [
    'k8s:io.cilium.k8s.policy.derived-from=NetworkPolicy',
    'k8s:io.cilium.k8s.policy.name=lockdown',
    'k8s:io.cilium.k8s.policy.namespace=prod',
    'k8s:io.cilium.k8s.policy.uid=uid-lockdown',
  ]);
  repo.import(JSON.stringify(first.rules));
  repo.import(JSON.stringify(translateNetworkPolicy(np({ ...all, policyTypes: ['Ingress'] }, 'lockdown', 'dev')).rules));
  const got = repo.get(first.origin);
  t.equal(got.length, 1, 'get by origin finds the object rule');
  t.same(got[0]!.labels, first.origin);
  t.equal(repo.get(['k8s:io.cilium.k8s.policy.name=lockdown']).length, 2, 'same name in two namespaces: two rules');
  // a new version of the object replaces the old in one change
  const second = translateNetworkPolicy(np({ ...all, ingress: [{ from: [{ podSelector: { matchLabels: { app: 'client' } } }] }] }, 'lockdown'));
  repo.import(JSON.stringify(second.rules), { replaceWithLabels: second.origin });
  t.equal(repo.get(first.origin).length, 1);
  t.equal(lpmVerdict(repo.resolve(ids.web!).entries, 'ingress', ids.client!.id, TCP, 80), 'allowed', 'the new version applies');
  repo.delete(first.origin);
  t.equal(repo.get(first.origin).length, 0);
  t.equal(repo.get().length, 1, 'the dev object stays');
  t.equal(lpmVerdict(repo.resolve(ids.web!).entries, 'ingress', ids.world!.id, TCP, 80), 'allowed', 'deleted: web no longer selected');
  t.equal(lpmVerdict(repo.resolve(ids.devOther!).entries, 'ingress', ids.world!.id, TCP, 80), 'denied', 'dev still locked down');
});

t.test('a NetworkPolicy without namespace is in default', async (t) => {
  const tr = translateNetworkPolicy({ apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name: 'x' }, spec: { podSelector: {} } });
  t.ok(tr.origin.includes('k8s:io.cilium.k8s.policy.namespace=default'));
  t.same((tr.rules[0]!.endpointSelector as { matchLabels: object }).matchLabels, { [NS_LABEL]: 'default' });
});

t.test('invalid NetworkPolicies are rejected, naming the field', async (t) => {
  const bad: [string, unknown, string][] = [
    ['ipBlock with a podSelector', np({ ...all, ingress: [{ from: [{ ipBlock: { cidr: '10.0.0.0/8' }, podSelector: {} }] }] }), '/spec/ingress/0/from/0/ipBlock'],
    ['empty peer', np({ ...all, egress: [{ to: [{}] }] }), '/spec/egress/0/to/0'],
    ['bad CIDR', np({ ...all, ingress: [{ from: [{ ipBlock: { cidr: '10.0.0.300/8' } }] }] }), '/spec/ingress/0/from/0/ipBlock/cidr'],
    ['except outside cidr', np({ ...all, ingress: [{ from: [{ ipBlock: { cidr: '10.0.0.0/8', except: ['11.0.0.0/16'] } }] }] }), '/spec/ingress/0/from/0/ipBlock/except/0'],
    ['endPort below port', np({ ...all, ingress: [{ ports: [{ port: 90, endPort: 80 }] }] }), '/spec/ingress/0/ports/0/endPort'],
    ['endPort without port', np({ ...all, ingress: [{ ports: [{ endPort: 80 }] }] }), '/spec/ingress/0/ports/0/endPort'],
    ['lower-case protocol', np({ ...all, ingress: [{ ports: [{ port: 80, protocol: 'tcp' }] }] }), '/spec/ingress/0/ports/0/protocol'],
    ['port out of range', np({ ...all, ingress: [{ ports: [{ port: 70000 }] }] }), '/spec/ingress/0/ports/0/port'],
    ['unknown spec field', np({ ...all, ingres: [] }), '/spec/ingres'],
    ['unknown policy type', np({ ...all, policyTypes: ['ingress'] }), '/spec/policyTypes/0'],
    ['missing podSelector', np({ ingress: [] }), '/spec/podSelector'],
    ['In without values', np({ podSelector: { matchExpressions: [{ key: 'app', operator: 'In' }] } }), '/spec/podSelector/matchExpressions/0/values'],
    ['Exists with values', np({ ...all, egress: [{ to: [{ namespaceSelector: { matchExpressions: [{ key: 'team', operator: 'Exists', values: ['a'] }] } }] }] }), '/spec/egress/0/to/0/namespaceSelector/matchExpressions/0/values'],
    ['wrong kind', { ...np(all), kind: 'CiliumNetworkPolicy' }, '/kind'],
  ];
  for (const [name, obj, pointer] of bad) {
    const err = t.throws(() => translateNetworkPolicy(obj), name) as unknown;
    t.ok(err instanceof PolicyError, `${name}: a PolicyError`);
    t.equal((err as PolicyError).pointer, pointer, `${name}: names ${pointer} (${(err as Error).message})`);
  }
});
