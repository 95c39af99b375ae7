import t from 'tap';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { invoke, testHive, type TestLike } from '../../src/hive/index.js';
import { statedirCell } from '../../src/cells/statedir/index.js';
import {
  identityCell, IdentityAllocatorToken, IdentityBackendToken, LocalIdentityAllocator, type IdentityAllocator,
  type IdentityBackend, type IdentityChange, type StoredIdentity,
} from '../../src/cells/identity/index.js';
import { ReservedIdentity } from '../../src/datapath/types.js';
import { parseLabels } from '../../src/lib/labels.js';

const use = invoke('use-identity', (_a: IdentityAllocator) => undefined, IdentityAllocatorToken);

function stateDir(t: TestLike): string {
  const dir = mkdtempSync(join(tmpdir(), 'cellium-identity-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function allocator(t: TestLike, dir = stateDir(t), config: Record<string, unknown> = {}) {
  const h = await testHive(t, [statedirCell, identityCell, use], { config: { 'state-dir': dir, ...config } });
  return h.get(IdentityAllocatorToken);
}

/** An in-memory backend (a mock standing in for the embedded or a future etcd backend). */
class MemoryBackend implements IdentityBackend {
  readonly name = 'memory';
  readonly table = new Map<string, StoredIdentity>();
  claims = 0;
  constructor(readonly taken = new Set<number>()) {}
  async load() { return [...this.table.values()]; }
  async claim(key: string, labels: readonly string[], id: number) {
    this.claims++;
    const have = this.table.get(key);
    if (have) return have.id;
    if (this.taken.has(id) || [...this.table.values()].some((s) => s.id === id)) return undefined;
    this.table.set(key, { id, labels });
    return id;
  }
  async remove(key: string) { this.table.delete(key); }
  async close() {}
}

t.test('reserved identities have Cilium numbers and labels', async (t) => {
  const a = await allocator(t);
  const want: Record<string, number> = {
    'reserved:host': 1, 'reserved:world': 2, 'reserved:unmanaged': 3, 'reserved:health': 4, 'reserved:init': 5,
    'reserved:remote-node': 6, 'reserved:kube-apiserver': 7, 'reserved:ingress': 8, 'reserved:world-ipv4': 9, 'reserved:world-ipv6': 10,
  };
  for (const [label, id] of Object.entries(want)) {
    const idn = a.lookup(id)!;
    t.same(idn.labels, [label], `identity ${id}`);
    t.equal(idn.reserved, true);
    t.equal(a.lookupByLabels(parseLabels([label]))?.id, id);
    t.equal((await a.allocate(parseLabels([label]))).identity.id, id, `allocating ${label} gives ${id}`);
  }
  t.equal(ReservedIdentity.worldIPv6, 10);
  t.equal((await a.allocate([])).identity.id, ReservedIdentity.init, 'no labels yet: init');
  t.equal((await a.allocate(parseLabels(['reserved:host', 'k8s:node=a']))).identity.id, 1, 'any set with reserved:host is the host');
  t.same(a.list().slice(0, 10).map((i) => i.id), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  t.same(a.range, { minGlobal: 256, maxGlobal: 65535, localScope: 1 << 24 });
});

t.test('the same label set maps to the same identity, whatever the order', async (t) => {
  const a = await allocator(t);
  const one = await a.allocate(parseLabels(['k8s:app=web', 'k8s:io.kubernetes.pod.namespace=default']));
  const two = await a.allocate([...parseLabels(['k8s:io.kubernetes.pod.namespace=default', 'k8s:app=web'])].reverse());
  const other = await a.allocate(parseLabels(['k8s:app=db', 'k8s:io.kubernetes.pod.namespace=default']));
  t.equal(one.isNew, true);
  t.equal(two.isNew, false);
  t.equal(one.identity.id, two.identity.id);
  t.ok(one.identity.id >= 256 && one.identity.id <= 65535);
  t.not(other.identity.id, one.identity.id);
  t.same(one.identity.labels, ['k8s:app=web', 'k8s:io.kubernetes.pod.namespace=default']);
  t.same(a.lookupByLabels(parseLabels(['k8s:io.kubernetes.pod.namespace=default', 'k8s:app=web']))?.id, one.identity.id);
});

t.test('concurrent allocations of one new label set share one identity and count every reference', async (t) => {
  const backend = new MemoryBackend();
  const h = await testHive(t, [statedirCell, identityCell, use], { replace: [[IdentityBackendToken, backend]] });
  const a = h.get(IdentityAllocatorToken) as LocalIdentityAllocator;
  const labels = parseLabels(['k8s:app=burst']);
  const res = await Promise.all(Array.from({ length: 20 }, () => a.allocate(labels)));
  t.equal(new Set(res.map((r) => r.identity.id)).size, 1);
  t.equal(res.filter((r) => r.isNew).length, 1);
  t.equal(a.refCount(res[0]!.identity.id), 20);
  t.equal(backend.claims, 1);
});

t.test('reference counting: freed on the last release, with add/delete events', async (t) => {
  const a = await allocator(t);
  const events: IdentityChange[] = [];
  a.changes$.subscribe((c) => events.push(c));
  const labels = parseLabels(['k8s:app=rc']);
  const { identity } = await a.allocate(labels);
  await a.allocate(labels);
  t.equal(await a.release(identity.id), false, 'one reference left');
  t.ok(a.lookup(identity.id));
  t.equal(await a.release(identity.id), true, 'last reference');
  t.equal(a.lookup(identity.id), undefined);
  t.equal(await a.release(identity.id), false, 'unknown now');
  t.equal(await a.release(ReservedIdentity.host), false, 'reserved identities are never freed');
  t.same(events.map((e) => [e.kind, e.identity.id]), [['add', identity.id], ['delete', identity.id]]);
});

t.test('the backend may refuse a number another allocator holds; the next free one is used', async (t) => {
  const backend = new MemoryBackend(new Set([256, 257]));
  const h = await testHive(t, [statedirCell, identityCell, use], { replace: [[IdentityBackendToken, backend]] });
  const { identity } = await h.get(IdentityAllocatorToken).allocate(parseLabels(['k8s:app=x']));
  t.equal(identity.id, 258);
  t.same(backend.table.get('k8s:app=x'), { id: 258, labels: ['k8s:app=x'] });
});

t.test('identities survive a restart: two hives on the same state dir', async (t) => {
  const dir = stateDir(t);
  const labels = parseLabels(['k8s:app=persist', 'k8s:io.kubernetes.pod.namespace=prod']);
  let id = 0;
  let freedId = 0;
  await t.test('first agent', async (t) => {
    const a = await allocator(t, dir);
    id = (await a.allocate(labels)).identity.id;
    freedId = (await a.allocate(parseLabels(['k8s:app=gone']))).identity.id;
    await a.allocate(parseLabels(['k8s:app=filler']));
    await a.release(freedId);
  });
  const file = JSON.parse(readFileSync(join(dir, 'identities.json'), 'utf8'));
  t.same(file.identities.map((s: StoredIdentity) => s.labels[0]), ['k8s:app=persist', 'k8s:app=filler'], 'the released identity is not kept');
  await t.test('second agent', async (t) => {
    const a = await allocator(t, dir);
    t.same(a.lookup(id)?.labels, ['k8s:app=persist', 'k8s:io.kubernetes.pod.namespace=prod'], 'restored before any allocation');
    const again = await a.allocate([...labels].reverse());
    t.equal(again.identity.id, id);
    t.equal(again.isNew, false);
    t.equal(await a.gc(), 1, 'GC frees the restored identity nobody re-allocated (filler)');
    t.ok(a.lookup(id), 'the re-allocated one stays');
  });
});

t.test('a corrupt state file stops the start with the file named', async (t) => {
  const dir = stateDir(t);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'identities.json'), '{"version":1,"identities":[{"id":"x"}]}');
  await t.rejects(allocator(t, dir), /identities\.json is unreadable.*\/identities\/0/s);
});

t.test('CIDR identities are local, reference counted and carry cidr and world labels', async (t) => {
  const a = await allocator(t);
  const c1 = await a.allocateCIDR('10.1.2.3/8');
  const c2 = await a.allocateCIDR('10.0.0.0/8');
  t.equal(c1.id, c2.id);
  t.ok(c1.id > 1 << 24);
  t.same(c1.labels, ['cidr:10.0.0.0/8', 'reserved:world']);
  const v6 = await a.allocateCIDR('fd00::/64');
  t.same(v6.labels, ['cidr:fd00--/64', 'reserved:world']);
  t.equal((await a.allocateCIDR('0.0.0.0/0')).id, ReservedIdentity.world);
  await t.rejects(a.allocateCIDR('10.0.0.0/99'), /invalid identity labels.*prefix length/);
  t.equal(await a.release(c1.id), false);
  t.equal(await a.release(c1.id), true);
  t.equal(a.lookup(c1.id), undefined);
});

t.test('the GC timer job frees unreferenced identities', async (t) => {
  const dir = stateDir(t);
  writeFileSync(join(dir, 'identities.json'), JSON.stringify({ version: 1, identities: [{ id: 300, labels: ['k8s:app=stale'] }] }));
  const a = await allocator(t, dir, { 'identity-gc-interval': '20ms' });
  t.ok(a.lookup(300), 'restored');
  const stored = () => JSON.parse(readFileSync(join(dir, 'identities.json'), 'utf8')).identities.length;
  for (let i = 0; i < 100 && (a.lookup(300) || stored() > 0); i++) await new Promise((r) => setTimeout(r, 10));
  t.equal(a.lookup(300), undefined);
  t.equal(stored(), 0, 'removed from the state file too');
});

t.test('a preferred number (restore): used when free and in range, else the next free one; a label set with a number keeps it', async (t) => {
  const backend = new MemoryBackend(new Set([300]));
  const h = await testHive(t, [statedirCell, identityCell, use], { replace: [[IdentityBackendToken, backend]] });
  const alloc = h.get(IdentityAllocatorToken);
  const a = (await alloc.allocate(parseLabels(['k8s:app=a']), { prefer: 4000 })).identity;
  t.equal(a.id, 4000, 'a free number is used');
  t.equal((await alloc.allocate(parseLabels(['k8s:app=a']), { prefer: 5000 })).identity.id, 4000, 'a label set with a number keeps it');
  t.equal((await alloc.allocate(parseLabels(['k8s:app=b']), { prefer: 4000 })).identity.id, 256, 'a number another label set holds: the next free one');
  t.equal((await alloc.allocate(parseLabels(['k8s:app=c']), { prefer: 300 })).identity.id, 257, 'a number the backend refuses: the next free one');
  t.equal((await alloc.allocate(parseLabels(['k8s:app=d']), { prefer: 70000 })).identity.id, 258, 'out of the global range: ignored');
  t.equal((await alloc.allocate(parseLabels(['k8s:app=e']), { prefer: 5 })).identity.id, 259, 'a reserved number: ignored');
  const local = (1 << 24) + 77;
  t.equal((await alloc.allocateCIDR('10.9.0.0/16', { prefer: local })).id, local, 'a CIDR identity takes its preferred local number');
  t.equal((await alloc.allocateCIDR('10.8.0.0/16', { prefer: local })).id, (1 << 24) + 1, 'taken: the next free local one');
  t.equal((await alloc.allocateCIDR('10.7.0.0/16', { prefer: 4001 })).id, (1 << 24) + 2, 'a global number is not a local one');
});
