/** fromCIDRSet/toCIDRSet with except: resolution, CIDR identities of the except prefixes, errors. */
import t from 'tap';
import { Proto, ReservedIdentity } from '../../src/datapath/types.js';
import { cidrLabel } from '../../src/cells/identity/index.js';
import { PolicyError } from '../../src/cells/policy/index.js';
import { lpmVerdict, policyHive, rules } from './helpers.js';

const world = { source: 'reserved', key: 'world', value: '' };

t.test('toCIDRSet: inside the cidr and outside every except; the except prefixes get identities while the rule exists', async (t) => {
  const { repo, alloc } = await policyHive(t);
  const web = alloc.id('k8s:app=web');
  const inside = await alloc.allocateCIDR('10.2.0.0/16');
  const excepted = await alloc.allocateCIDR('10.1.2.0/24');
  const outside = await alloc.allocateCIDR('192.168.0.0/16');
  repo.import(rules({ endpointSelector: { matchLabels: { app: 'web' } }, labels: ['k8s:r=1'], egress: [{ toCIDRSet: [{ cidr: '10.0.0.0/8', except: ['10.1.0.0/16', '10.3.0.0/16'] }] }] }));
  await repo.settled();
  const exceptId = alloc.lookupByLabels([cidrLabel('10.1.0.0/16'), world]);
  t.ok(exceptId, 'the except prefix has a CIDR identity (addresses in it never fall back to world or the outer prefix)');
  const outerId = alloc.lookupByLabels([cidrLabel('10.0.0.0/8'), world])!;
  const e = repo.resolve(web).entries;
  const v = (id: number) => lpmVerdict(e, 'egress', id, Proto.TCP, 443);
  t.equal(v(inside.id), 'allowed');
  t.equal(v(outerId.id), 'allowed', 'the outer prefix itself');
  t.equal(v(excepted.id), 'denied', 'inside an except');
  t.equal(v(exceptId!.id), 'denied', 'the except prefix itself');
  t.equal(v(outside.id), 'denied');
  t.equal(v(ReservedIdentity.world), 'denied');
  repo.delete(['k8s:r=1']);
  await repo.settled();
  t.notOk(alloc.lookupByLabels([cidrLabel('10.1.0.0/16'), world]), 'released with the rule');
});

t.test('fromCIDRSet 0.0.0.0/0 with except: world and other CIDRs yes, the except no', async (t) => {
  const { repo, alloc } = await policyHive(t);
  const web = alloc.id('k8s:app=web');
  const priv = await alloc.allocateCIDR('10.9.0.0/16');
  const pub = await alloc.allocateCIDR('8.8.8.0/24');
  repo.import(rules({ endpointSelector: { matchLabels: { app: 'web' } }, ingress: [{ fromCIDRSet: [{ cidr: '0.0.0.0/0', except: ['10.0.0.0/8'] }], toPorts: [{ ports: [{ port: '80', protocol: 'TCP' }] }] }] }));
  await repo.settled();
  const e = repo.resolve(web).entries;
  t.equal(lpmVerdict(e, 'ingress', ReservedIdentity.world, Proto.TCP, 80), 'allowed');
  t.equal(lpmVerdict(e, 'ingress', pub.id, Proto.TCP, 80), 'allowed');
  t.equal(lpmVerdict(e, 'ingress', priv.id, Proto.TCP, 80), 'denied');
  t.equal(lpmVerdict(e, 'ingress', pub.id, Proto.TCP, 81), 'denied');
  t.ok(repo.selectors().some((s) => s.selector === 'cidr:0.0.0.0/0 except 10.0.0.0/8'), 'the selector names its exceptions');
});

t.test('invalid CIDR sets are refused, naming the field', async (t) => {
  const { repo } = await policyHive(t);
  const cases: [object, string][] = [
    [{ toCIDRSet: [{ cidr: '10.0.0.0/8', except: ['11.0.0.0/8'] }] }, '/0/egress/0/toCIDRSet/0/except/0'],
    [{ toCIDRSet: [{ cidr: '10.0.0.0/8', except: ['fd00::/64'] }] }, '/0/egress/0/toCIDRSet/0/except/0'],
    [{ toCIDRSet: [{ cidr: 'nope' }] }, '/0/egress/0/toCIDRSet/0/cidr'],
    [{ toCIDRSet: [{ except: ['10.0.0.0/8'] }] }, '/0/egress/0/toCIDRSet/0/cidr'],
    [{ toCIDRSet: [{ cidr: '10.0.0.0/8', exclude: [] }] }, '/0/egress/0/toCIDRSet/0/exclude'],
  ];
  for (const [entry, pointer] of cases) {
    const err = t.throws(() => repo.import(rules({ endpointSelector: {}, egress: [entry] }))) as PolicyError;
    t.equal(err.pointer, pointer, err.message);
  }
  t.equal(repo.get().length, 0, 'nothing imported');
});
