// Maps against the kernel (root): create, pin, reopen, batch update/lookup/delete, typed maps
// for every datapath struct, the policy sync, per-CPU reads and error mapping of real failures.
import t from 'tap';
import { readdirSync } from 'node:fs';
import { BpfError, BpfMap, MapType, TypedMap, UpdateFlags, type Codec } from '../../src/bpf/index.js';
import { openIPCacheMap, openLxcMap, openPolicyMap, policyMapPath, readDropCounters, syncPolicyMap } from '../../src/maps/index.js';
import { expandPolicy, policyKeyId } from '../../src/maps/policy/key.js';
import type { PolicyEntry } from '../../src/datapath/types.js';
import { skipUnlessBpf, testBpfRoot } from '../bpf/fixtures/topology.js';

const skip = skipUnlessBpf();

function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n);
  return b;
}

t.test('create, pin, reopen, unpin', { skip }, async (t) => {
  const { root, remove } = testBpfRoot();
  t.teardown(remove);
  const m = BpfMap.create({ name: 'cellium_t1', type: MapType.HASH, keySize: 4, valueSize: 8, maxEntries: 64 });
  t.teardown(() => m.close());
  m.update(u32(1), Buffer.from('aaaaaaaa'));
  m.pin(`${root}/t1`);
  const again = BpfMap.openPinned(`${root}/t1`);
  t.teardown(() => again.close());
  t.equal(again.info.id, m.info.id, 'the pin opens the same map');
  t.equal(again.lookup(u32(1))?.toString(), 'aaaaaaaa');
  t.equal(again.lookup(u32(2)), undefined, 'absent key');
  t.throws(() => again.update(u32(1), Buffer.from('bbbbbbbb'), UpdateFlags.NOEXIST), { code: 'EEXIST' });
  t.throws(() => again.update(u32(9), Buffer.from('bbbbbbbb'), UpdateFlags.EXIST), { code: 'ENOENT' });
  t.equal(again.delete(u32(1)), true);
  t.equal(again.delete(u32(1)), false, 'deleting an absent key is false');
  t.throws(() => again.lookup(Buffer.alloc(3)), { code: 'EINVAL' }, 'key size is checked');
  t.equal(BpfMap.unpin(`${root}/t1`), true);
  t.equal(BpfMap.unpin(`${root}/t1`), false);
  const err = t.throws(() => BpfMap.openPinned(`${root}/t1`)) as BpfError;
  t.ok(err instanceof BpfError);
  t.equal(err.syscall, 'bpf_obj_get');
  t.equal(err.code, 'ENOENT');
  t.match(err.hint, /mount -t bpf bpf \/sys\/fs\/bpf/);
  const notBpffs = t.throws(() => m.pin('/tmp/cellium-not-bpffs')) as BpfError;
  t.equal(notBpffs.syscall, 'bpf_obj_pin');
  t.match(notBpffs.hint, /bpffs/);
});

t.test('batch update, lookup, iterate, delete', { skip }, async (t) => {
  const m = BpfMap.create({ name: 'cellium_t2', type: MapType.HASH, keySize: 4, valueSize: 4, maxEntries: 10000 });
  t.teardown(() => m.close());
  const n = 5000;
  const keys = Buffer.alloc(4 * n);
  const values = Buffer.alloc(4 * n);
  for (let i = 0; i < n; i++) {
    keys.writeUInt32LE(i, 4 * i);
    values.writeUInt32LE(i * 3, 4 * i);
  }
  t.equal(m.updateBatch(keys, values, n), n);
  const all = m.lookupAll(1000);
  t.equal(all.count, n, 'batch lookup reads every entry in chunks');
  const seen = new Map<number, number>();
  for (let i = 0; i < all.count; i++) seen.set(all.keys.readUInt32LE(4 * i), all.values.readUInt32LE(4 * i));
  t.equal(seen.size, n);
  t.equal(seen.get(4321), 4321 * 3);
  t.equal([...m.keys()].length, n, 'next-key iteration agrees');
  const roomy = { keys: Buffer.alloc(4 * n), values: Buffer.alloc(4 * n) };
  const again = m.lookupAll(1000, roomy);
  t.equal(again.count, n, 'a lookup into buffers with room reads every entry');
  t.equal(again.keys.buffer, roomy.keys.buffer, 'and the keys are written into the given buffer');
  t.equal(again.values.buffer, roomy.values.buffer, 'and so are the values');
  const reread = new Map<number, number>();
  for (let i = 0; i < again.count; i++) reread.set(again.keys.readUInt32LE(4 * i), again.values.readUInt32LE(4 * i));
  t.strictSame(reread, seen, 'the same entries as a fresh read');
  const small = { keys: Buffer.alloc(4 * 10), values: Buffer.alloc(4 * 10) };
  const grown = m.lookupAll(1000, small);
  t.equal(grown.count, n, 'buffers too small for the map grow as without them');
  const regrown = new Map<number, number>();
  for (let i = 0; i < grown.count; i++) regrown.set(grown.keys.readUInt32LE(4 * i), grown.values.readUInt32LE(4 * i));
  t.strictSame(regrown, seen, 'the same entries either way');
  t.equal(m.deleteBatch(keys, 100), 100);
  t.equal(m.lookupAll().count, n - 100);
  t.throws(() => m.deleteBatch(keys, 1), { code: 'ENOENT' }, 'batch delete of an absent key fails');
});

t.test('batch writes reuse their buffers: each batch zeroes what its codec leaves unwritten', { skip }, async (t) => {
  const m = BpfMap.create({ name: 'cellium_tscr', type: MapType.HASH, keySize: 4, valueSize: 8, maxEntries: 20000 });
  t.teardown(() => m.close());
  // a codec that writes only the first 4 of the value's 8 bytes (the C struct's padding stays 0)
  const partial: Codec<number> = { size: 8, encode: (v, b, o) => void b.writeUInt32LE(v, o), decode: (b, o) => b.readUInt32LE(o) + b.readUInt32LE(o + 4) * 2 ** 32 };
  const full: Codec<number> = { size: 8, encode: (v, b, o) => void b.writeDoubleLE(v, o), decode: (b, o) => b.readDoubleLE(o) };
  const key: Codec<number> = { size: 4, encode: (v, b, o) => void b.writeUInt32LE(v, o), decode: (b, o) => b.readUInt32LE(o) };
  const dirty = new TypedMap(m, key, full);
  const typed = new TypedMap(m, key, partial);
  // the same TypedMap first writes full values (every byte set), then partial ones over its scratch
  const both = new TypedMap(m, key, { size: 8, encode: (v, b, o) => (v < 0 ? full.encode(-v, b, o) : partial.encode(v, b, o)), decode: partial.decode });
  t.equal(both.setMany([[1, -1e300], [2, -1e300], [3, -1e300]]), 3);
  t.not(typed.get(1), 0, 'the full values filled the scratch buffer');
  t.equal(both.setMany([[1, 7], [2, 8]]), 2);
  t.equal(typed.get(1), 7, 'the bytes the codec left are zero, not the previous batch\'s');
  t.equal(typed.get(2), 8);
  t.equal(dirty.get(3), 1e300, 'an entry not in the later batch is untouched');
  const many = Array.from({ length: 10000 }, (_, i) => [i, i + 1] as const);
  t.equal(typed.setMany(many), 10000, 'a batch larger than the kept buffer');
  t.equal(typed.get(9999), 10000);
  t.equal(typed.setMany([[1, 5]]), 1);
  t.equal(typed.get(1), 5);
});

t.test('typed datapath maps under a BPF root', { skip }, async (t) => {
  const { root, remove } = testBpfRoot();
  t.teardown(remove);
  const ipc = openIPCacheMap(root);
  t.teardown(() => ipc.close());
  ipc.setMany([['10.0.0.0/8', { identity: 100, flags: 0 }], ['10.1.2.3/32', { identity: 300, flags: 1 }], ['fd00::/64', { identity: 400, flags: 0 }]]);
  t.strictSame(ipc.get('10.1.2.3/32'), { identity: 300, flags: 1 });
  t.strictSame(ipc.get('10.0.0.0/8'), { identity: 100, flags: 0 });
  t.strictSame(ipc.entries().map(([k]) => k).sort(), ['10.0.0.0/8', '10.1.2.3/32', 'fd00::/64']);
  const reopened = openIPCacheMap(root);
  t.teardown(() => reopened.close());
  t.equal(reopened.map.info.id, ipc.map.info.id, 'a second open reuses the pinned map');

  const lxc = openLxcMap(root);
  t.teardown(() => lxc.close());
  lxc.set('10.0.0.2', { ifIndex: 7, identity: 1234, endpointId: 42, mac: '02:00:00:00:00:2a' });
  lxc.set('fd00::2', { ifIndex: 7, identity: 1234, endpointId: 42, mac: '02:00:00:00:00:2a' });
  t.strictSame(lxc.get('fd00::2'), { ifIndex: 7, identity: 1234, endpointId: 42, mac: '02:00:00:00:00:2a' });
  t.strictSame(lxc.entries().map(([k]) => k).sort(), ['10.0.0.2', 'fd00::2']);

  const counters = readDropCounters(root);
  t.strictSame(counters.policy, { packets: 0, bytes: 0 }, 'fresh metrics are zero');
  t.ok('policy-deny' in counters);
});

t.test('policy map sync writes only the difference', { skip }, async (t) => {
  const { root, remove } = testBpfRoot();
  t.teardown(remove);
  const pm = openPolicyMap(root, 42);
  t.teardown(() => pm.close());
  t.equal(pm.map.info.type, MapType.LPM_TRIE);
  t.match(policyMapPath(root, 42), /cellium_policy_00042$/);
  const v1: PolicyEntry[] = [
    { identity: 1000, direction: 'egress', protocol: 6, port: 80, deny: false },
    { identity: 0, direction: 'ingress', protocol: 0, port: 0, deny: false },
    { identity: 2000, direction: 'egress', protocol: 17, port: 1000, endPort: 1999, deny: true },
  ];
  const first = syncPolicyMap(pm, v1);
  t.strictSame(first, { written: expandPolicy(v1).length, deleted: 0, unchanged: 0 });
  const ids = (): string[] => pm.entries().map(([k, d]) => `${policyKeyId(k)}:${d}`).sort();
  t.strictSame(ids(), expandPolicy(v1).map((e) => `${policyKeyId(e.key)}:${e.deny}`).sort(), 'the kernel holds the expansion');
  const v2 = [v1[0]!, { ...v1[1]!, deny: true }];
  const second = syncPolicyMap(pm, v2);
  t.strictSame(second, { written: 1, deleted: expandPolicy([v1[2]!]).length, unchanged: 1 });
  t.strictSame(ids(), expandPolicy(v2).map((e) => `${policyKeyId(e.key)}:${e.deny}`).sort());
  t.strictSame(syncPolicyMap(pm, v2), { written: 0, deleted: 0, unchanged: 2 }, 'a repeated sync writes nothing');
  t.strictSame(syncPolicyMap(pm, []), { written: 0, deleted: 2, unchanged: 0 });
  t.equal(pm.entries().length, 0);
});

t.test('a size changed between two runs: the map is replaced by one of the new size holding every entry; too small refuses', { skip }, async (t) => {
  const { root, remove } = testBpfRoot();
  t.teardown(remove);
  const first = openIPCacheMap(root, 64);
  first.setMany([['10.0.0.0/8', { identity: 16777217, flags: 0 }], ['10.1.2.3/32', { identity: 300, flags: 0 }], ['fd00::/64', { identity: 400, flags: 0 }]]);
  const before = first.entries().sort();
  const oldId = first.map.info.id;
  first.close();

  const bigger = openIPCacheMap(root, 128);
  t.teardown(() => bigger.close());
  t.equal(bigger.map.info.maxEntries, 128, 'the new size');
  t.not(bigger.map.info.id, oldId, 'a new map');
  t.strictSame(bigger.entries().sort(), before, 'with every entry of the old one');
  t.equal(openIPCacheMap(root).map.info.id, bigger.map.info.id, 'pinned at the same path');
  t.same(readdirSync(root).filter((n) => n.includes('resizing')), [], 'no pending pin left');

  t.throws(() => openIPCacheMap(root, 2), { name: 'BpfError', message: /cellium_ipcache.*\n.*holds 3 entries and cannot shrink to 2: give a size of at least 3/ }, 'too small: refused, naming the map, the count and the fix');
  const still = openIPCacheMap(root);
  t.teardown(() => still.close());
  t.equal(still.map.info.id, bigger.map.info.id, 'the map in place stays');

  const policy = openPolicyMap(root, 7, 16);
  policy.setMany(expandPolicy([{ identity: 0, direction: 'ingress', protocol: 0, port: 0, deny: false }, { identity: 300, direction: 'ingress', protocol: 0, port: 0, deny: true }]).map((e) => [e.key, e.deny] as const));
  const policyBefore = policy.entries().map(([k, v]) => `${policyKeyId(k)}=${v}`).sort();
  policy.close();
  const resized = openPolicyMap(root, 7, 32);
  t.teardown(() => resized.close());
  t.equal(resized.map.info.maxEntries, 32);
  t.strictSame(resized.entries().map(([k, v]) => `${policyKeyId(k)}=${v}`).sort(), policyBefore, 'a policy map keeps its allows and denies');
});
