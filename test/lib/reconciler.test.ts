import t from 'tap';
import { DesiredTable, Reconciler, type ReconcileOps } from '../../src/lib/reconciler/index.js';
import { sleep } from '../../src/hive/index.js';

/** A target map with injectable failures, standing in for a kernel map. */
function fakeTarget() {
  const data = new Map<string, number>();
  const failing = new Set<string>();
  let updateCalls = 0;
  const ops: ReconcileOps<number> = {
    async update(batch) {
      updateCalls++;
      const failed = new Map<string, Error>();
      for (const [k, v] of batch) {
        if (failing.has(k)) failed.set(k, new Error(`E2BIG writing ${k}`));
        else data.set(k, v);
      }
      return failed;
    },
    async delete(keys) {
      for (const k of keys) data.delete(k);
      return new Map();
    },
    async list() {
      return new Map(data);
    },
  };
  return { data, failing, ops, calls: () => updateCalls };
}

t.test('changes are applied incrementally and in batches', async (t) => {
  const target = fakeTarget();
  const table = new DesiredTable<number>('policy');
  const r = new Reconciler(table, target.ops, { batchSize: 100 });
  r.start();
  for (let i = 0; i < 250; i++) table.upsert(`k${i}`, i);
  await r.flush();
  t.equal(target.data.size, 250);
  t.ok(target.calls() <= 4, `batched (${target.calls()} update calls for 250 objects)`);
  t.same(table.status().done, 250);
  table.delete('k0');
  table.upsert('k1', 1001);
  await r.flush();
  t.notOk(target.data.has('k0'));
  t.equal(target.data.get('k1'), 1001);
  t.equal(table.status().state, 'done');
  await r.stop();
});

t.test('a failing write is retried with backoff and reported in status', async (t) => {
  const target = fakeTarget();
  const table = new DesiredTable<number>('ipcache');
  const errors: string[] = [];
  const r = new Reconciler(table, target.ops, { retryMinMs: 20, retryMaxMs: 200, onError: (k) => errors.push(k) });
  r.start();
  target.failing.add('bad');
  table.upsert('bad', 1);
  table.upsert('good', 2);
  await r.flush();
  const st = table.status();
  t.equal(st.state, 'error');
  t.equal(st.errors, 1);
  t.match(st.lastErrors[0], /bad: E2BIG writing bad/);
  t.equal(table.get('bad')?.state, 'error');
  await sleep(80);
  t.ok(errors.length >= 2, `retried (${errors.length} attempts)`);
  target.failing.delete('bad');
  await sleep(250);
  t.equal(table.get('bad')?.state, 'done', 'succeeds once the target accepts it');
  t.equal(target.data.get('bad'), 1);
  await r.stop();
});

t.test('prune removes entries nobody desires and restores entries deleted by hand', async (t) => {
  const target = fakeTarget();
  const table = new DesiredTable<number>('lxc');
  const r = new Reconciler(table, target.ops, { pruneIntervalMs: 30 });
  r.start();
  table.upsert('a', 1);
  table.upsert('b', 2);
  await r.flush();
  target.data.set('stale', 99); // added by hand / left by a crash
  target.data.delete('a'); // deleted by hand
  target.data.set('b', 3); // edited by hand
  await sleep(120);
  t.same([...target.data.entries()].sort(), [['a', 1], ['b', 2]]);
  t.ok(r.stats().pruned >= 1 && r.stats().repaired >= 2);
  await r.stop();
});

t.test('prune spares the undesired entries `keep` names', async (t) => {
  const target = fakeTarget();
  const table = new DesiredTable<number>('ipcache');
  const r = new Reconciler(table, target.ops);
  r.start();
  table.upsert('a', 1);
  await r.flush();
  target.data.set('live-but-not-desired', 7);
  target.data.set('stale', 8);
  t.same(await r.prune((k) => k === 'live-but-not-desired'), { pruned: 1, repaired: 0 });
  t.same([...target.data.keys()].sort(), ['a', 'live-but-not-desired']);
  await r.prune();
  t.same([...target.data.keys()], ['a'], 'without keep, it goes too');
  await r.stop();
});
