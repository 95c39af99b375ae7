// The pod CIDR allocator of Kubernetes mode (cluster-pool IPAM without an operator), on a fake
// CiliumNode API: free subnets in address order, the previous CIDR honoured when free, a CIDR never
// given twice nor taken from a node, nothing written without the Lease or over a changed object,
// two nodes found with one CIDR reported; and the agent side refusing a CIDR outside the pool or
// shared with another node.
import t from 'tap';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { K8sPodCIDR, PodCIDRAllocator, PREVIOUS_CIDR_ANNOTATION, type CiliumNode, type CiliumNodeApi } from '../../src/cells/cluster/index.js';
import { silentLogger } from '../../src/hive/index.js';
import { FakeNodes } from './fake-nodes.js';

const POOL = '10.30.0.0/22';

t.test('free subnets in address order; a node keeps its CIDR; the previous CIDR comes back when free', async (t) => {
  const api = new FakeNodes();
  api.add('a', ['10.30.0.0/24']);
  api.add('b');
  api.add('c', [], { [PREVIOUS_CIDR_ANNOTATION]: '10.30.3.0/24' });
  const alloc = new PodCIDRAllocator(api, POOL, 24, () => true, silentLogger());
  const r = await alloc.round();
  t.same(api.cidrs(), { a: ['10.30.0.0/24'], b: ['10.30.1.0/24'], c: ['10.30.3.0/24'] });
  t.same([...r.allocated], [['b', '10.30.1.0/24'], ['c', '10.30.3.0/24']]);
  api.add('d', [], { [PREVIOUS_CIDR_ANNOTATION]: '10.30.1.0/24' });
  await alloc.round();
  t.same(api.cidrs().d, ['10.30.2.0/24'], 'the previous CIDR is another node\'s now: a free one instead');
  const writes = api.writes;
  await alloc.round();
  t.equal(api.writes, writes, 'nothing to do: nothing written');
});

t.test('the pool exhausted: the node waits, nothing shared', async (t) => {
  const api = new FakeNodes();
  for (const n of ['a', 'b', 'c', 'd', 'e']) api.add(n);
  const r = await new PodCIDRAllocator(api, POOL, 24, () => true, silentLogger()).round();
  t.same(r.waiting, ['e']);
  const all = Object.values(api.cidrs()).flat();
  t.equal(new Set(all).size, 4, 'four distinct CIDRs for four nodes');
});

t.test('no Lease, no write; a node changed meanwhile waits for the next round', async (t) => {
  const api = new FakeNodes();
  api.add('a');
  let leader = false;
  const alloc = new PodCIDRAllocator(api, POOL, 24, () => leader, silentLogger());
  t.same((await alloc.round()).allocated.size, 0);
  t.same(api.cidrs().a, [], 'a follower writes nothing');
  leader = true;
  const stale = { ...api, list: async () => (await api.list()).map((o) => ({ ...o, metadata: { ...o.metadata, resourceVersion: '0' } })), update: (cn: CiliumNode) => api.update(cn) };
  const r = await new PodCIDRAllocator(stale, POOL, 24, () => true, silentLogger()).round();
  t.same(r.waiting, ['a'], 'the update at an old resourceVersion was refused');
  t.same(api.cidrs().a, []);
});

t.test('two nodes with one CIDR are reported and its CIDR never given again', async (t) => {
  const api = new FakeNodes();
  api.add('a', ['10.30.0.0/24']);
  api.add('b', ['10.30.0.0/24']);
  api.add('c');
  const r = await new PodCIDRAllocator(api, POOL, 24, () => true, silentLogger()).round();
  t.same([...r.shared], [['10.30.0.0/24', ['a', 'b']]]);
  t.same(api.cidrs().c, ['10.30.1.0/24']);
});

t.test('the agent waits for its CIDR, refuses one outside the pool or shared, keeps it in the state dir', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cellium-k8s-podcidr-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const stateFile = join(dir, 'pod-cidr.json');
  const api = new FakeNodes();
  const wait = (waitMs = 2000) => new K8sPodCIDR(api as unknown as CiliumNodeApi, { node: 'a', ipv4: '10.0.0.1', pool: POOL, mask: 24, stateFile, waitMs }, silentLogger());
  await t.rejects(wait(300).claim(), /no pod CIDR in spec\.ipam\.podCIDRs of CiliumNode a after 0 s.*cellium-pod-cidr-allocator/);
  t.ok(api.objs.has('a'), 'the CiliumNode was created for the allocator to fill');
  const alloc = new PodCIDRAllocator(api, POOL, 24, () => true, silentLogger());
  const claim = wait().claim();
  await alloc.round();
  t.equal(await claim, '10.30.0.0/24');
  t.same(JSON.parse(readFileSync(stateFile, 'utf8')), { cidr: '10.30.0.0/24' });
  api.objs.delete('a');
  const again = wait().claim();
  await new Promise((r) => setTimeout(r, 100));
  t.equal(api.objs.get('a')?.metadata.annotations?.[PREVIOUS_CIDR_ANNOTATION], '10.30.0.0/24', 'recreated with the previous CIDR as a hint');
  await alloc.round();
  t.equal(await again, '10.30.0.0/24', 'the same CIDR back');
  api.add('b', ['10.30.0.0/24']);
  await t.rejects(wait().claim(), /pod CIDR 10\.30\.0\.0\/24 is also in spec\.ipam\.podCIDRs of b: two nodes must never share one/);
  api.objs.delete('b');
  api.objs.set('a', { ...api.objs.get('a')!, spec: { ipam: { podCIDRs: ['10.99.0.0/24'] } } });
  await t.rejects(wait().claim(), /\/spec\/ipam\/podCIDRs\/0 10\.99\.0\.0\/24 is not a \/24 of the cluster pool 10\.30\.0\.0\/22/);
});
