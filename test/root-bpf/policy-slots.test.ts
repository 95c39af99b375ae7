// cellium_policy_maps against the kernel (root): a slot's write and delete run on a worker (the
// kernel's grace period after them blocks no caller) and resolve once the slot reads back changed;
// operations on one slot apply in order; the async map calls reject like the synchronous ones throw.
import t from 'tap';
import { BpfMap, MapType } from '../../src/bpf/index.js';
import { PolicyMapsMap } from '../../src/maps/endpoints/index.js';
import { POLICY_MAPS_MAP_SPEC } from '../../src/maps/endpoints/layout.js';
import { skipUnlessBpf, testBpfRoot } from '../bpf/fixtures/topology.js';

const skip = skipUnlessBpf();

t.test('setVisible and empty: read back, in order, idempotent', { skip }, async (t) => {
  const { root, remove } = testBpfRoot();
  t.teardown(remove);
  const slots = PolicyMapsMap.open(root);
  t.teardown(() => slots.close());
  const a = BpfMap.create(POLICY_MAPS_MAP_SPEC.inner!);
  const b = BpfMap.create(POLICY_MAPS_MAP_SPEC.inner!);
  t.teardown(() => {
    a.close();
    b.close();
  });
  await slots.setVisible(7, a);
  t.equal(slots.get(7), a.info.id, 'the slot holds the map once setVisible resolved');
  await slots.setVisible(7, a);
  t.equal(slots.get(7), a.info.id, 'a second write of the same map changes nothing');
  // started together: they apply in the order they were asked for
  await Promise.all([slots.empty(7), slots.setVisible(7, b), slots.empty(8)]);
  t.equal(slots.get(7), b.info.id, 'empty then set on one slot leaves the set');
  t.same(slots.ids(), [7]);
  await Promise.all([slots.setVisible(9, a), slots.empty(9)]);
  t.equal(slots.get(9), undefined, 'set then empty leaves the slot empty');
  await slots.empty(7);
  t.equal(slots.get(7), undefined);
  t.same(slots.ids(), []);
});

t.test('setManyVisible: many slots in one batch write, after the operations already started on them', { skip }, async (t) => {
  const { root, remove } = testBpfRoot();
  t.teardown(remove);
  const slots = PolicyMapsMap.open(root);
  t.teardown(() => slots.close());
  const a = BpfMap.create(POLICY_MAPS_MAP_SPEC.inner!);
  const b = BpfMap.create(POLICY_MAPS_MAP_SPEC.inner!);
  t.teardown(() => {
    a.close();
    b.close();
  });
  const ids = Array.from({ length: 500 }, (_, i) => i + 1);
  const pending = slots.setVisible(3, b);
  await slots.setManyVisible(ids.map((id) => [id, id % 2 ? a : b] as const));
  await pending;
  t.ok(ids.every((id) => slots.get(id) === (id % 2 ? a : b).info.id), 'every slot holds its map (slot 3: the batch, which came after the single write)');
  await slots.setManyVisible([[1, b]]);
  t.equal(slots.get(1), b.info.id, 'one slot: setVisible');
  const bad = BpfMap.create({ name: 'cellium_tb', type: MapType.ARRAY, keySize: 4, valueSize: 4, maxEntries: 4 });
  t.teardown(() => bad.close());
  await t.rejects(slots.setManyVisible([[1, a], [2, bad]]), { syscall: 'bpf_map_update_batch', code: 'EINVAL' }, 'a map of another shape is refused');
  t.equal(slots.get(1), a.info.id, 'the slots before the refused one were written (read them back)');
});

t.test('the async map calls reject with the syscall and errno', { skip }, async (t) => {
  const m = BpfMap.create({ name: 'cellium_ta', type: MapType.ARRAY, keySize: 4, valueSize: 4, maxEntries: 4 });
  t.teardown(() => m.close());
  const key = (n: number): Buffer => Buffer.from(new Uint32Array([n]).buffer);
  await m.updateAsync(key(1), key(42));
  t.same(m.lookup(key(1)), key(42), 'updateAsync writes the entry');
  await t.rejects(m.updateAsync(key(9), key(1)), { syscall: 'bpf_map_update_elem', code: 'E2BIG' }, 'an index past the array');
  await t.rejects(m.deleteAsync(key(1)), { syscall: 'bpf_map_delete_elem', code: 'EINVAL' }, 'arrays have no delete');
  const h = BpfMap.create({ name: 'cellium_tb', type: MapType.HASH, keySize: 4, valueSize: 4, maxEntries: 4 });
  t.teardown(() => h.close());
  t.equal(await h.deleteAsync(key(3)), false, 'deleting an absent key resolves false');
  await h.updateAsync(key(3), key(3));
  t.equal(await h.deleteAsync(key(3)), true);
});
