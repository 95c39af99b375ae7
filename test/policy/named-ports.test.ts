// Named ports (Kubernetes `port: http`): an ingress rule's named port resolves, per endpoint, to the
// number the endpoint's pod declares under that name and protocol; a name it does not declare
// allows nothing (never every port); a deny by name denies the declared number; the shared
// distillation is per named-port set. Egress names: test/policy/egress-named-ports.test.ts.
import t from 'tap';
import { Proto } from '../../src/datapath/types.js';
import { PolicyError, resolveNamedPorts, type NamedPort } from '../../src/cells/policy/index.js';
import { lpmVerdict, policyHive, rules } from './helpers.js';

const TCP = Proto.TCP;
const UDP = Proto.UDP;
const http = (port: number, protocol: number = TCP): NamedPort => ({ name: 'http', port, protocol });
const fromClient = (ports: object[]) => ({ fromEndpoints: [{ matchLabels: { app: 'client' } }], toPorts: [{ ports }] });

/** A policy cell with identities app=web and app=client, and a rule on app=web with `fields`; `v` is client -> web's verdict for web's named ports. */
async function onWeb(t: Parameters<typeof policyHive>[0], fields: object) {
  const { repo, alloc } = await policyHive(t);
  const web = alloc.id('k8s:app=web');
  const client = alloc.id('k8s:app=client');
  repo.import(rules({ endpointSelector: { matchLabels: { app: 'web' } }, ...fields }));
  const v = (named: NamedPort[] | undefined, proto: number, port: number) => lpmVerdict(repo.resolve(web, named).entries, 'ingress', client.id, proto, port);
  return { repo, alloc, web, v };
}

t.test('an ingress named port allows the number the endpoint declares, and only that', async (t) => {
  const { repo, web, v } = await onWeb(t, { ingress: [fromClient([{ port: 'http', protocol: 'TCP' }])] });
  t.equal(v([http(8080)], TCP, 8080), 'allowed', 'http=8080 declared: 8080 allowed');
  t.equal(v([http(8080)], TCP, 80), 'denied', 'another port stays denied');
  t.equal(v([http(8080)], UDP, 8080), 'denied', 'another protocol stays denied');
  t.equal(v([http(8080, UDP)], TCP, 8080), 'denied', 'the name declared for UDP only: nothing for TCP');
  t.equal(v([], TCP, 8080), 'denied', 'no named ports: the rule allows nothing');
  t.equal(v(undefined, TCP, 80), 'denied', 'resolve without named ports: nothing');
  t.ok(repo.resolve(web, []).ingressEnforced, 'the rule still enforces ingress');
  for (const port of [0, 1, 65535]) t.equal(v([], TCP, port), 'denied', `an unresolved name never means every port (${port})`);
  t.same(repo.resolve(web, []).entries.filter((e) => e.direction === 'ingress'), [], 'no ingress entry at all');

  // the pod's port behind the name changes (a new pod under the same name): the number follows
  t.equal(v([http(9000)], TCP, 9000), 'allowed', 'http=9000 now: 9000 allowed');
  t.equal(v([http(9000)], TCP, 8080), 'denied', 'the old number is no longer allowed');
  // the pod renames its port: the policy's name no longer matches
  t.equal(v([{ name: 'web', port: 9000, protocol: TCP }], TCP, 9000), 'denied', 'the port renamed away from http: denied');
});

t.test('ANY protocol resolves each protocol the name is declared for; numeric ports beside names are unchanged', async (t) => {
  const { v } = await onWeb(t, { ingress: [fromClient([{ port: 'dns' }, { port: '443', protocol: 'TCP' }])] });
  const named: NamedPort[] = [{ name: 'dns', port: 53, protocol: UDP }, { name: 'dns', port: 5353, protocol: TCP }];
  t.equal(v(named, UDP, 53), 'allowed', 'dns/UDP = 53');
  t.equal(v(named, TCP, 5353), 'allowed', 'dns/TCP = 5353');
  t.equal(v(named, TCP, 53), 'denied', '53 is dns for UDP only');
  t.equal(v(named, TCP, 443), 'allowed', 'the numeric port');
  t.equal(v([], TCP, 443), 'allowed', 'the numeric port without named ports');
});

t.test('a deny by name denies the declared number over a wider allow', async (t) => {
  const { v } = await onWeb(t, { ingress: [{ fromEndpoints: [{ matchLabels: { app: 'client' } }] }], ingressDeny: [fromClient([{ port: 'admin', protocol: 'TCP' }])] });
  const admin: NamedPort[] = [{ name: 'admin', port: 9999, protocol: TCP }];
  t.equal(v(admin, TCP, 9999), 'denied', 'admin=9999 denied');
  t.equal(v(admin, TCP, 80), 'allowed', 'the rest stays allowed');
  t.equal(v([], TCP, 9999), 'allowed', 'undeclared: the deny denies nothing');
});

t.test('one distillation per rule set and named-port set; rules without names ignore named ports', async (t) => {
  const { repo, alloc } = await policyHive(t);
  const web = alloc.id('k8s:app=web');
  const db = alloc.id('k8s:app=db');
  alloc.id('k8s:app=client');
  repo.import(rules(
    { endpointSelector: { matchLabels: { app: 'web' } }, ingress: [fromClient([{ port: 'http', protocol: 'TCP' }])] },
    { endpointSelector: { matchLabels: { app: 'db' } }, ingress: [fromClient([{ port: '5432', protocol: 'TCP' }])] },
  ));
  const a = repo.resolve(web, [http(80), { name: 'metrics', port: 9090, protocol: TCP }]);
  t.equal(repo.resolve(web, [{ name: 'metrics', port: 9090, protocol: TCP }, http(80)]), a, 'the same ports in another order: shared');
  t.not(repo.resolve(web, [http(81)]), a, 'other ports: its own');
  t.equal(repo.resolve(db, [http(80)]), repo.resolve(db, [http(81)]), 'no named port in the rules: named ports do not matter');
});

t.test('resolveNamedPorts leaves numeric ports and drops undeclared names', async (t) => {
  const numeric = [{ protocol: TCP, port: 80 }];
  t.equal(resolveNamedPorts(numeric, [http(1)]), numeric, 'no names: the same list');
  t.same(resolveNamedPorts([{ protocol: TCP, port: 0, name: 'http' }, { protocol: TCP, port: 443 }], [http(8080), http(53, UDP)]), [{ protocol: TCP, port: 8080 }, { protocol: TCP, port: 443 }]);
  t.same(resolveNamedPorts([{ protocol: TCP, port: 0, name: 'http' }], []), []);
});

t.test('named ports are checked: endPort (both directions), ICMP and invalid names are refused naming the field; trace never matches a name', async (t) => {
  const { repo, alloc } = await policyHive(t);
  const bad: [object, string, RegExp][] = [
    [{ endpointSelector: {}, egress: [{ toPorts: [{ ports: [{ port: 'dns', protocol: 'UDP', endPort: 60 }] }] }] }, '/0/egress/0/toPorts/0/ports/0/endPort', /endPort with a named port/],
    [{ endpointSelector: {}, ingress: [{ toPorts: [{ ports: [{ port: 'http', endPort: 90 }] }] }] }, '/0/ingress/0/toPorts/0/ports/0/endPort', /endPort with a named port/],
    [{ endpointSelector: {}, ingress: [{ toPorts: [{ ports: [{ port: 'ping', protocol: 'ICMP' }] }] }] }, '/0/ingress/0/toPorts/0/ports/0/port', /ICMP has no ports/],
    [{ endpointSelector: {}, ingress: [{ toPorts: [{ ports: [{ port: 'a--b' }] }] }] }, '/0/ingress/0/toPorts/0/ports/0/port', /not a port number nor a port name/],
    [{ endpointSelector: {}, ingress: [{ toPorts: [{ ports: [{ port: 'abcdefghijklmnop' }] }] }] }, '/0/ingress/0/toPorts/0/ports/0/port', /not a port number nor a port name/],
  ];
  for (const [rule, pointer, re] of bad) {
    const err = t.throws(() => repo.import(rules(rule))) as unknown as PolicyError;
    t.ok(err instanceof PolicyError, `${pointer}: a PolicyError`);
    t.equal(err.pointer, pointer);
    t.match(err.message, re);
  }
  t.equal(repo.get().length, 0, 'nothing was imported');
  const web = alloc.id('k8s:app=web');
  alloc.id('k8s:app=client');
  repo.import(rules({ endpointSelector: { matchLabels: { app: 'web' } }, ingress: [fromClient([{ port: 'http', protocol: 'TCP' }])] }));
  const tr = repo.trace({ labels: ['k8s:app=client'] }, { identity: web.id }, 80, 'TCP');
  t.equal(tr.ingress.verdict, 'denied', 'a trace has no endpoint ports: the name does not match');
  t.match(tr.log.join('\n'), /named port http \(resolved per endpoint\)/, 'the trace log shows the name');
});
