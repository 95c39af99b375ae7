import t from 'tap';
import { memoryLBMaps, MemoryNumberLBMap, MemoryServiceLBMap } from '../../src/datapath/memory/lb-maps.js';
import type { LBServiceKey, LBServiceValue } from '../../src/datapath/lb-maps.js';

const key = (address: string, port: number, slot: number, proto = 6, scope = 0): LBServiceKey => ({ address, port, slot, proto, scope });
const val = (backendId: number): LBServiceValue => ({ backendId, count: 0, qcount: 0, revNat: 1, flags: 0, flags2: 0 });

t.test('the in-memory services map keeps each key apart and rebuilds keys for entries()', async (t) => {
  const m = new MemoryServiceLBMap('svc');
  const keys = [
    key('10.96.0.10', 80, 0), key('10.96.0.10', 80, 1), key('10.96.0.10', 80, 65535), key('10.96.0.10', 65535, 1), key('10.96.0.10', 80, 1, 17),
    key('10.96.0.10', 80, 1, 6, 1), key('10.96.0.10', 0, 0, 0), key('10.96.0.11', 80, 1), key('fd00::10', 80, 1), key('10.96.0.10', 1, 255, 255, 255),
  ];
  m.set(keys.map((k, i) => [k, val(i + 1)] as const));
  t.equal(m.size, keys.length);
  keys.forEach((k, i) => t.equal(m.get(k)?.backendId, i + 1, JSON.stringify(k)));
  t.same(m.entries().sort((a, b) => a[1].backendId - b[1].backendId).map(([k]) => k), keys, 'entries() gives the keys written');
  m.set([[keys[1]!, val(100)]]);
  t.equal(m.size, keys.length, 'an overwrite is no new entry');
  t.equal(m.get(keys[1]!)?.backendId, 100);
  m.delete([keys[1]!, keys[7]!, key('10.1.1.1', 1, 1)]);
  t.equal(m.size, keys.length - 2, 'absent keys are skipped');
  t.equal(m.get(keys[1]!), undefined);
  t.equal(m.get(keys[7]!), undefined);
  t.equal(m.get(keys[0]!)?.backendId, 1);
});

t.test('the in-memory maps refuse entries beyond their size, as the kernel does', async (t) => {
  const s = new MemoryServiceLBMap('svc', 2);
  s.set([[key('10.96.0.1', 80, 0), val(1)], [key('10.96.0.1', 80, 1), val(2)]]);
  t.throws(() => s.set([[key('10.96.0.2', 80, 0), val(3)]]), /svc is full \(2 entries\)/);
  s.set([[key('10.96.0.1', 80, 1), val(4)]]);
  t.equal(s.get(key('10.96.0.1', 80, 1))?.backendId, 4, 'an existing key is still written');
  const n = new MemoryNumberLBMap<string>('num', 1);
  n.set([[5, 'a']]);
  t.throws(() => n.set([[6, 'b']]), /num is full/);
  n.set([[5, 'c']]);
  t.same(n.entries(), [[5, 'c']]);
  n.delete([5, 6]);
  t.equal(n.size, 0);
});

t.test('affinity match entries by backend and rev-NAT index', async (t) => {
  const m = memoryLBMaps();
  m.affinityMatch.set([[{ backendId: 1, revNat: 2 }, 1], [{ backendId: 2, revNat: 1 }, 1], [{ backendId: 70000, revNat: 65535 }, 1]]);
  t.equal(m.affinityMatch.get({ backendId: 1, revNat: 2 }), 1);
  t.equal(m.affinityMatch.get({ backendId: 1, revNat: 1 }), undefined);
  t.equal(m.affinityMatch.entries().length, 3);
  m.affinityMatch.delete([{ backendId: 2, revNat: 1 }]);
  t.same(m.affinityMatch.entries().map(([k]) => k), [{ backendId: 1, revNat: 2 }, { backendId: 70000, revNat: 65535 }]);
});
