/**
 * CiliumNetworkPolicy / CiliumClusterwideNetworkPolicy translation: namespace scoping, origin
 * labels, and invalid objects rejected whole (naming the field), checked through the repository.
 */
import t from 'tap';
import { Proto, ReservedIdentity } from '../../src/datapath/types.js';
import { PolicyError } from '../../src/cells/policy/index.js';
import { translateCCNP, translateCNP } from '../../src/cells/policy-k8s/index.js';
import type { TestLike } from '../../src/hive/index.js';
import { lpmVerdict, policyHive } from '../policy/helpers.js';

const NS = 'k8s:io.kubernetes.pod.namespace';
const ingressFromClient = { endpointSelector: { matchLabels: { app: 'web' } }, ingress: [{ fromEndpoints: [{ matchLabels: { app: 'client' } }], toPorts: [{ ports: [{ port: '80', protocol: 'TCP' }] }] }] };
const cnp = (extra: object) => ({ apiVersion: 'cilium.io/v2', kind: 'CiliumNetworkPolicy', metadata: { name: 'web', namespace: 'prod', uid: 'u1' }, ...extra });
const ccnp = (extra: object) => ({ apiVersion: 'cilium.io/v2', kind: 'CiliumClusterwideNetworkPolicy', metadata: { name: 'web-all', uid: 'u2' }, ...extra });

async function cluster(t: TestLike) {
  const { repo, alloc } = await policyHive(t);
  return {
    repo,
    web: alloc.id('k8s:app=web', `${NS}=prod`),
    devWeb: alloc.id('k8s:app=web', `${NS}=dev`),
    client: alloc.id('k8s:app=client', `${NS}=prod`),
    devClient: alloc.id('k8s:app=client', `${NS}=dev`),
    world: alloc.lookup(ReservedIdentity.world)!,
    host: alloc.lookup(ReservedIdentity.host)!,
  };
}

t.test('a CNP selects and admits only its own namespace; origin labels on every spec', async (t) => {
  const c = await cluster(t);
  const tr = translateCNP(cnp({ spec: ingressFromClient, specs: [{ endpointSelector: {}, egress: [{ toEntities: ['host'] }, { toEndpoints: [{ matchLabels: { 'reserved:host': '' } }] }] }] }));
  t.same(tr.origin, ['k8s:io.cilium.k8s.policy.derived-from=CiliumNetworkPolicy', 'k8s:io.cilium.k8s.policy.name=web', 'k8s:io.cilium.k8s.policy.namespace=prod', 'k8s:io.cilium.k8s.policy.uid=u1']);
  t.equal(tr.rules.length, 2);
  for (const r of tr.rules) t.same(r.labels, tr.origin, 'each rule carries the origin');
  t.same(tr.rules[0]!.endpointSelector, { matchLabels: { app: 'web', [`k8s:${'io.kubernetes.pod.namespace'}`]: 'prod' } }, 'endpointSelector pinned to the namespace');
  c.repo.import(JSON.stringify(tr.rules));
  const v = (subj: typeof c.web, dir: 'ingress' | 'egress', peer: typeof c.web, port = 80) => lpmVerdict(c.repo.resolve(subj).entries, dir, peer.id, Proto.TCP, port);
  t.equal(v(c.web, 'ingress', c.client), 'allowed');
  t.equal(v(c.web, 'ingress', c.devClient), 'denied', 'peer without namespace: only the policy namespace');
  t.equal(v(c.devWeb, 'ingress', c.devClient), 'allowed', 'web in dev is not selected');
  t.equal(v(c.client, 'egress', c.host), 'allowed', 'reserved peers are not namespace-scoped');
  t.equal(v(c.client, 'egress', c.world), 'denied');
  t.equal(v(c.devClient, 'egress', c.world), 'allowed', 'the {} endpointSelector is the namespace, not the cluster');
  t.equal(c.repo.get(tr.origin).length, 2, 'get by origin');
});

t.test('a CCNP is cluster-wide', async (t) => {
  const c = await cluster(t);
  const tr = translateCCNP(ccnp({ spec: ingressFromClient }));
  t.same(tr.origin, ['k8s:io.cilium.k8s.policy.derived-from=CiliumClusterwideNetworkPolicy', 'k8s:io.cilium.k8s.policy.name=web-all', 'k8s:io.cilium.k8s.policy.uid=u2']);
  c.repo.import(JSON.stringify(tr.rules));
  t.equal(lpmVerdict(c.repo.resolve(c.web).entries, 'ingress', c.devClient.id, Proto.TCP, 80), 'allowed');
  t.equal(lpmVerdict(c.repo.resolve(c.devWeb).entries, 'ingress', c.client.id, Proto.TCP, 80), 'allowed');
  t.equal(lpmVerdict(c.repo.resolve(c.devWeb).entries, 'ingress', c.world.id, Proto.TCP, 80), 'denied');
});

t.test('a CNP with fromCIDRSet except resolves through the repository', async (t) => {
  const { repo, alloc } = await policyHive(t);
  const web = alloc.id('k8s:app=web', `${NS}=prod`);
  const inside = await alloc.allocateCIDR('10.2.0.0/16');
  const excepted = await alloc.allocateCIDR('10.1.2.0/24');
  const tr = translateCNP(cnp({ spec: { endpointSelector: { matchLabels: { app: 'web' } }, ingress: [{ fromCIDRSet: [{ cidr: '10.0.0.0/8', except: ['10.1.0.0/16'] }] }] } }));
  repo.import(JSON.stringify(tr.rules));
  await repo.settled();
  const e = repo.resolve(web).entries;
  t.equal(lpmVerdict(e, 'ingress', inside.id, Proto.TCP, 22), 'allowed');
  t.equal(lpmVerdict(e, 'ingress', excepted.id, Proto.TCP, 22), 'denied');
});

t.test('an invalid CNP or CCNP is rejected whole, naming the field', async (t) => {
  const bad: [string, () => unknown, string][] = [
    ['second spec invalid', () => translateCNP(cnp({ spec: ingressFromClient, specs: [ingressFromClient, { endpointSelector: {}, ingress: [{ toPorts: [{ ports: [{ port: '80', protocol: 'tcp' }] }] }] }] })), '/specs/1/ingress/0/toPorts/0/ports/0/protocol'],
    ['unknown rule field', () => translateCNP(cnp({ spec: { ...ingressFromClient, egres: [] } })), '/spec/egres'],
    ['endPort with a named egress port', () => translateCNP(cnp({ spec: { endpointSelector: {}, egress: [{ toPorts: [{ ports: [{ port: 'http', endPort: 90 }] }] }] } })), '/spec/egress/0/toPorts/0/ports/0/endPort'],
    ['invalid port name', () => translateCNP(cnp({ spec: { endpointSelector: {}, ingress: [{ toPorts: [{ ports: [{ port: 'web_port' }] }] }] } })), '/spec/ingress/0/toPorts/0/ports/0/port'],
    ['except outside cidr', () => translateCNP(cnp({ spec: { endpointSelector: {}, egress: [{ toCIDRSet: [{ cidr: '10.0.0.0/8', except: ['192.168.0.0/16'] }] }] } })), '/spec/egress/0/toCIDRSet/0/except/0'],
    ['bad CIDR in a set', () => translateCNP(cnp({ spec: { endpointSelector: {}, egress: [{ toCIDRSet: [{ cidr: 'ten/8' }] }] } })), '/spec/egress/0/toCIDRSet/0/cidr'],
    ['no spec', () => translateCNP(cnp({})), '/spec'],
    ['CCNP with a namespace', () => translateCCNP({ ...ccnp({ spec: ingressFromClient }), metadata: { name: 'x', namespace: 'prod' } }), '/metadata/namespace'],
    ['CNP given as CCNP', () => translateCCNP(cnp({ spec: ingressFromClient })), '/kind'],
    ['not an object', () => translateCNP([]), ''],
  ];
  for (const [name, run, pointer] of bad) {
    const err = t.throws(run, name) as unknown;
    t.ok(err instanceof PolicyError, `${name}: a PolicyError`);
    t.equal((err as PolicyError).pointer, pointer, `${name}: names ${pointer || '/'} (${(err as Error).message})`);
  }
});
