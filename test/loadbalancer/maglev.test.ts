import t from 'tap';
import { maglevTable } from '../../src/lib/maglev.js';

const backends = (n: number, w = 1) => Array.from({ length: n }, (_, i) => ({ id: i + 1, name: `10.0.1.${i + 1}:8080/TCP`, weight: w }));

function counts(table: Uint32Array): Map<number, number> {
  const c = new Map<number, number>();
  for (const id of table) c.set(id, (c.get(id) ?? 0) + 1);
  return c;
}

t.test('every slot is filled, evenly across equal backends', async (t) => {
  const table = maglevTable(backends(7), 16381);
  const c = counts(table);
  t.equal(c.size, 7);
  t.notOk(c.has(0), 'no empty slot');
  for (const [id, n] of c) t.ok(Math.abs(n - 16381 / 7) <= 16381 / 7 * 0.05, `backend ${id} has ${n} slots (within 5% of M/N)`);
  t.same(maglevTable(backends(7), 16381), table, 'deterministic');
  t.same([...maglevTable([], 251)].every((x) => x === 0), true, 'no backends: an empty table');
});

t.test('removing one of N backends remaps about 1/N of the flows', async (t) => {
  for (const n of [3, 5, 10, 20]) {
    const m = 16381;
    const all = backends(n);
    const before = maglevTable(all, m);
    const removed = all[Math.floor(n / 2)]!;
    const after = maglevTable(all.filter((b) => b !== removed), m);
    let moved = 0;
    let movedOfOthers = 0;
    for (let i = 0; i < m; i++) {
      if (before[i] !== after[i]) {
        moved++;
        if (before[i] !== removed.id) movedOfOthers++;
      }
    }
    const share = moved / m;
    t.ok(share <= 1 / n + 0.03, `N=${n}: ${(share * 100).toFixed(1)}% of the slots moved (1/N = ${(100 / n).toFixed(1)}%, margin 3 points)`);
    t.ok(movedOfOthers / m <= 0.03, `N=${n}: ${(movedOfOthers / m * 100).toFixed(2)}% of the other backends' slots moved`);
  }
});

t.test('weights: a backend of weight 2 gets about twice the slots; weight 0 none', async (t) => {
  const c = counts(maglevTable([{ id: 1, name: 'a', weight: 200 }, { id: 2, name: 'b', weight: 100 }, { id: 3, name: 'c', weight: 0 }], 16381));
  t.notOk(c.has(3));
  const ratio = c.get(1)! / c.get(2)!;
  t.ok(ratio > 1.9 && ratio < 2.1, `ratio ${ratio.toFixed(2)}`);
});
