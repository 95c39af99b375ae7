/**
 * A NetworkPolicy ipBlock selects pods by their addresses (Kubernetes' semantics, what the upstream
 * Netpol tests `should allow egress access to server in CIDR block`, `should enforce except clause
 * …` and `should ensure an IP overlapping both IPBlock.CIDR and IPBlock.Except is allowed` expect):
 * an endpoint identity is selected when every address of its endpoints (the node's endpoint map:
 * this node's endpoints and other nodes' CiliumEndpoints) is inside cidr and outside every except,
 * re-matched when addresses change; fail closed (an identity with one pod inside and one outside,
 * or with no known address, or while the map is not complete, is not selected). A
 * CiliumNetworkPolicy's toCIDRSet keeps Cilium's semantics: CIDR identities only.
 */
import t from 'tap';
import { Proto } from '../../src/datapath/types.js';
import type { Identity } from '../../src/cells/identity/index.js';
import { NamedPortMapToken, type PolicyChange } from '../../src/cells/policy/index.js';
import { translateNetworkPolicy, type NetworkPolicy } from '../../src/cells/policy-k8s/index.js';
import type { TestLike } from '../../src/hive/index.js';
import { lpmVerdict, policyHive } from '../policy/helpers.js';

const TCP = Proto.TCP;
const NS = 'k8s:io.kubernetes.pod.namespace';

/** Pods x/a, x/b, y/b, each its own identity, with addresses in 10.0.0.0/24; x/a egress by `egress`. */
async function cluster(t: TestLike) {
  const { repo, alloc, h } = await policyHive(t);
  const map = h.get(NamedPortMapToken);
  const ids: Record<string, Identity> = {
    xa: alloc.id('k8s:pod=a', `${NS}=x`),
    xb: alloc.id('k8s:pod=b', `${NS}=x`),
    yb: alloc.id('k8s:pod=b', `${NS}=y`),
  };
  map.upsert('endpoint:1', ids.xa!.id, [], ['10.0.0.11']);
  map.upsert('endpoint:2', ids.xb!.id, [], ['10.0.0.12']);
  map.upsert('endpoint:3', ids.yb!.id, [], ['10.0.0.13']);
  const changes: PolicyChange[] = [];
  repo.changes$.subscribe((c) => changes.push(c));
  const egress = async (to: object[], name = 'allow-cidr') => {
    const np = { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name, namespace: 'x' }, spec: { podSelector: { matchLabels: { pod: 'a' } }, egress: [{ to }] } } as unknown as NetworkPolicy;
    repo.import(JSON.stringify(translateNetworkPolicy(np).rules));
    await repo.settled();
  };
  const v = (peer: string | number) => lpmVerdict(repo.resolve(ids.xa!).entries, 'egress', typeof peer === 'number' ? peer : ids[peer]!.id, TCP, 80);
  return { repo, alloc, map, ids, egress, v, changes };
}

t.test('cidr /4 except x/b/32: every pod inside is allowed, x/b is not (the upstream except-clause test)', async (t) => {
  const { egress, v } = await cluster(t);
  await egress([{ ipBlock: { cidr: '0.0.0.0/4', except: ['10.0.0.12/32'] } }]);
  t.equal(v('yb'), 'allowed', 'y/b 10.0.0.13 is inside 0.0.0.0/4 and not excepted');
  t.equal(v('xa'), 'allowed', 'x/a itself too');
  t.equal(v('xb'), 'denied', 'x/b is the except');
});

t.test('cidr = one pod /32 (the upstream allow-egress-in-CIDR test): that pod only', async (t) => {
  const { egress, v } = await cluster(t);
  await egress([{ ipBlock: { cidr: '10.0.0.13/32' } }]);
  t.equal(v('yb'), 'allowed');
  t.equal(v('xb'), 'denied');
});

t.test('the except, then a policy replacing it with the excepted pod\'s /32 (the upstream overlap test)', async (t) => {
  const { egress, v } = await cluster(t);
  await egress([{ ipBlock: { cidr: '0.0.0.0/4', except: ['10.0.0.12/32'] } }]);
  t.equal(v('xb'), 'denied');
  await egress([{ ipBlock: { cidr: '10.0.0.12/32' } }]);
  t.equal(v('xb'), 'allowed', 'the new version allows x/b');
  t.equal(v('yb'), 'denied', 'and nothing else');
});

t.test('fail closed per identity: one pod inside and one outside (or in the except) leaves the identity out', async (t) => {
  const { map, ids, egress, v, changes } = await cluster(t);
  await egress([{ ipBlock: { cidr: '10.0.0.0/24', except: ['10.0.0.128/25'] } }]);
  t.equal(v('yb'), 'allowed');
  const before = changes.length;
  map.upsert('cep:y/b-2', ids.yb!.id, [], ['10.0.0.200']);
  t.ok(changes.length > before, 'the new address is a policy change');
  t.ok([...changes.at(-1)!.affected].includes(ids.xa!.id), 'x/a, whose rule selects by address, is affected');
  t.equal(v('yb'), 'denied', 'a second y/b pod in the except: y/b is no longer selected');
  map.upsert('cep:y/b-2', ids.yb!.id, [], ['192.168.7.7']);
  t.equal(v('yb'), 'denied', 'outside the cidr: still not');
  map.remove('cep:y/b-2');
  t.equal(v('yb'), 'allowed', 'gone: y/b is selected again');
  map.remove('endpoint:3');
  t.equal(v('yb'), 'denied', 'no known address: not selected');
});

t.test('an address change of the only pod moves the selection', async (t) => {
  const { map, ids, egress, v } = await cluster(t);
  await egress([{ ipBlock: { cidr: '10.0.0.0/28' } }]);
  t.equal(v('yb'), 'allowed');
  map.upsert('endpoint:3', ids.yb!.id, [], ['10.0.0.77']);
  t.equal(v('yb'), 'denied', 'moved outside');
  map.upsert('endpoint:3', ids.yb!.id, [], ['10.0.0.7']);
  t.equal(v('yb'), 'allowed', 'back inside');
});

t.test('while the map is not complete (other nodes\' CiliumEndpoints not listed yet) no pod is selected by address', async (t) => {
  const { map, egress, v } = await cluster(t);
  const done = map.pending('ciliumendpoints');
  await egress([{ ipBlock: { cidr: '10.0.0.0/24' } }]);
  t.equal(v('yb'), 'denied', 'incomplete: a pod of y/b elsewhere could be outside');
  done();
  t.equal(v('yb'), 'allowed', 'listed: selected');
});

t.test('CIDR identities stay selected by an ipBlock; a CiliumNetworkPolicy toCIDRSet selects no pod (Cilium\'s semantics)', async (t) => {
  const { repo, alloc, v, egress } = await cluster(t);
  const net = await alloc.allocateCIDR('10.0.0.0/24');
  await egress([{ ipBlock: { cidr: '10.0.0.0/16' } }]);
  t.equal(v(net.id), 'allowed', 'the CIDR identity inside the block');
  repo.delete('all');
  repo.import(JSON.stringify({ apiVersion: 'cilium.io/v2', kind: 'CiliumNetworkPolicy', metadata: { name: 'cnp', namespace: 'x' }, spec: { endpointSelector: { matchLabels: { pod: 'a' } }, egress: [{ toCIDRSet: [{ cidr: '10.0.0.0/16' }] }] } }));
  await repo.settled();
  t.equal(v('yb'), 'denied', 'toCIDRSet: the pod\'s endpoint identity is not a CIDR identity');
  t.equal(v(net.id), 'allowed');
  const keys = repo.selectors().map((s) => s.selector);
  t.ok(keys.includes('cidr:10.0.0.0/16') && !keys.some((k) => k.startsWith('ipblock:')), 'a plain CIDR selector, no ipBlock one');
});
