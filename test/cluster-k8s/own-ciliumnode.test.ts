// This node's CiliumNode and its owner, the Kubernetes Node (Kubernetes mode without --kvstore), on
// a fake CiliumNode API: created owned by the Node when there is one and unowned when there is
// none; an existing object gains the owner or a new uid without losing its pod CIDR or other owners;
// the registry writes its CiliumNode again when it is deleted, except when the Node that owned it is
// gone (the node was removed), and adopts a Node registered after the agent started.
import t from 'tap';
import { Subject } from 'rxjs';
import { CiliumNodeRegistry, ensureOwnCiliumNode, type CiliumNode, type CiliumNodeApi, type K8sNode } from '../../src/cells/cluster/index.js';
import type { K8sObject, Resource, ResourceEvent } from '../../src/cells/k8s/index.js';
import { silentLogger, type Jobs } from '../../src/hive/index.js';
import { FakeNodes } from './fake-nodes.js';

const api = (f: FakeNodes): CiliumNodeApi => f as unknown as CiliumNodeApi;
const owners = (cn: CiliumNode | undefined): unknown => cn?.metadata.ownerReferences?.map((r) => `${r.kind}/${r.name}/${r.uid}`);

t.test('created owned by the Node, or unowned without one', async (t) => {
  const f = new FakeNodes();
  await ensureOwnCiliumNode(api(f), { name: 'a', ipv4: '10.0.0.1', nodeUid: 'u1' }, silentLogger());
  t.same(owners(f.objs.get('a')), ['Node/a/u1']);
  await ensureOwnCiliumNode(api(f), { name: 'b', ipv4: '10.0.0.2' }, silentLogger());
  t.equal(f.objs.get('b')?.metadata.ownerReferences, undefined, 'no Node: no owner');
});

t.test('an existing CiliumNode gains the owner or its new uid, keeping its pod CIDR and other owners', async (t) => {
  const f = new FakeNodes();
  f.add('a', ['10.30.1.0/24']);
  await ensureOwnCiliumNode(api(f), { name: 'a', ipv4: '10.0.0.1', nodeUid: 'u1' }, silentLogger());
  t.same(owners(f.objs.get('a')), ['Node/a/u1']);
  t.same(f.cidrs().a, ['10.30.1.0/24'], 'the pod CIDR stays');
  const cur = f.objs.get('a')!;
  f.objs.set('a', { ...cur, metadata: { ...cur.metadata, ownerReferences: [{ apiVersion: 'example.io/v1', kind: 'Keeper', name: 'k', uid: 'k1' }, ...(cur.metadata.ownerReferences ?? [])] } });
  const writes = f.writes;
  await ensureOwnCiliumNode(api(f), { name: 'a', ipv4: '10.0.0.1', nodeUid: 'u1' }, silentLogger());
  t.equal(f.writes, writes, 'same owner: nothing written');
  await ensureOwnCiliumNode(api(f), { name: 'a', ipv4: '10.0.0.1', nodeUid: 'u2' }, silentLogger());
  t.same(owners(f.objs.get('a')), ['Keeper/k/k1', 'Node/a/u2'], 'the Node registered again: its new uid; another owner kept');
  await ensureOwnCiliumNode(api(f), { name: 'a', ipv4: '10.0.0.1' }, silentLogger());
  t.same(owners(f.objs.get('a')), ['Keeper/k/k1', 'Node/a/u2'], 'no Node seen: the owner is left as it is');
});

/** Jobs that run an observer's function on each value as it comes (enough for this registry). */
function immediateJobs(): Jobs {
  const subs: { unsubscribe(): void }[] = [];
  return {
    oneShot: () => undefined,
    timer: () => ({ trigger: () => undefined }),
    observer: (_name, source, fn) => void subs.push(source.subscribe((v) => void fn(v, { signal: new AbortController().signal } as never))),
  } as Jobs;
}

async function settle(f: FakeNodes, name: string, want: boolean): Promise<void> {
  for (let i = 0; i < 200 && f.objs.has(name) !== want; i++) await new Promise((r) => setTimeout(r, 5));
}

t.test('the registry: written again when deleted, unless its Node is gone; a Node registered later becomes the owner', async (t) => {
  const f = new FakeNodes();
  const cns = new Subject<ResourceEvent<CiliumNode>>();
  const own = new Subject<ResourceEvent<K8sNode>>();
  const res = <T extends K8sObject>(s: Subject<ResourceEvent<T>>): Resource<T> => ({ events: () => s.asObservable() }) as unknown as Resource<T>;
  const reg = new CiliumNodeRegistry(api(f), res(cns), res(own), { name: 'a', cluster: 'default', ipv4: '10.0.0.1' }, () => ({ fixed: false }), immediateJobs(), silentLogger());
  reg.start();
  await settle(f, 'a', true);
  t.equal(f.objs.get('a')?.metadata.ownerReferences, undefined, 'no Node yet: unowned');

  f.k8sNodes.set('a', 'u1');
  own.next({ kind: 'upsert', key: 'a', object: { metadata: { name: 'a', uid: 'u1' } } });
  for (let i = 0; i < 200 && !owners(f.objs.get('a')); i++) await new Promise((r) => setTimeout(r, 5));
  t.same(owners(f.objs.get('a')), ['Node/a/u1'], 'the Node registered after the start owns it');

  const gone = f.objs.get('a')!;
  f.objs.delete('a');
  cns.next({ kind: 'delete', key: 'a', object: gone });
  await settle(f, 'a', true);
  t.ok(f.objs.has('a'), 'deleted by hand while its Node exists: written again');

  f.k8sNodes.delete('a');
  f.objs.delete('a');
  cns.next({ kind: 'delete', key: 'a', object: gone });
  await new Promise((r) => setTimeout(r, 100));
  t.notOk(f.objs.has('a'), 'its Node deleted (the garbage collector took the CiliumNode): not written again');

  f.k8sNodes.set('a', 'u2');
  own.next({ kind: 'upsert', key: 'a', object: { metadata: { name: 'a', uid: 'u2' } } });
  await settle(f, 'a', true);
  t.same(owners(f.objs.get('a')), ['Node/a/u2'], 'the node registered again: written, owned by the new Node');
  await reg.stop();
});
