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

t.test('run as a job: started, the table state reported to its health after every round, stopped by the abort', async (t) => {
  const target = fakeTarget();
  const table = new DesiredTable<number>('cellium_lxc');
  const r = new Reconciler(table, target.ops, { retryMinMs: 20, retryMaxMs: 100 });
  const reports: Array<[string, string]> = [];
  const health = { ok: (m: string) => reports.push(['ok', m]), degraded: (m: string) => reports.push(['degraded', m]) };
  const ac = new AbortController();
  const running = r.run({ signal: ac.signal, health });
  t.same(reports.at(-1), ['ok', 'cellium_lxc: 0/0 done'], 'healthy and empty at the start');
  table.upsert('a', 1);
  table.upsert('b', 2);
  await r.flush();
  t.same(reports.at(-1), ['ok', 'cellium_lxc: 2/2 done'], 'written by the running reconciler, without a flush of its own');
  target.failing.add('c');
  table.upsert('c', 3);
  await r.flush();
  t.equal(reports.at(-1)![0], 'degraded', 'a failing write degrades the job');
  t.match(reports.at(-1)![1], /2\/3 done, 1 failing \(retried with backoff\): c: E2BIG writing c/);
  target.failing.delete('c');
  for (let i = 0; i < 50 && table.status().errors; i++) await sleep(20);
  t.same(reports.at(-1), ['ok', 'cellium_lxc: 3/3 done'], 'the retry (by the job, not by a flush) heals it');
  ac.abort();
  await running;
  table.upsert('d', 4);
  await sleep(30);
  t.notOk(target.data.has('d'), 'after the abort nothing reacts to changes');
  const before = reports.length;
  await r.flush();
  t.equal(target.data.get('d'), 4, 'a flush still writes, once');
  t.equal(reports.length, before, 'and reports to nobody: the job is over');
  t.equal(await Promise.race([r.run({ signal: ac.signal }), sleep(50).then(() => 'hung')]), undefined, 'run with an aborted signal returns at once');
});

t.test('flushes of a stopped reconciler never run two rounds at once, and each sees the changes made before it', async (t) => {
  const data = new Map<string, number>();
  let inFlight = 0;
  let maxInFlight = 0;
  const ops: ReconcileOps<number> = {
    async update(batch) {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      await sleep(5);
      for (const [k, v] of batch) data.set(k, v);
      inFlight--;
      return new Map();
    },
    async delete(keys) {
      for (const k of keys) data.delete(k);
      return new Map();
    },
    async list() {
      return new Map(data);
    },
  };
  const table = new DesiredTable<number>('t');
  const r = new Reconciler(table, ops);
  const flushes: Promise<void>[] = [];
  for (let i = 0; i < 10; i++) {
    table.upsert(`k${i}`, i);
    const want = i;
    flushes.push(r.flush().then(() => void t.equal(data.get(`k${want}`), want, `flush ${i} returned after k${i} was written`)));
  }
  await Promise.all(flushes);
  t.equal(maxInFlight, 1, 'one round at a time');
});

t.test('prune compares through the table\'s equal: what it calls equal is not rewritten', async (t) => {
  const target = fakeTarget();
  // values equal when they agree modulo 10 (say, a field the target does not keep)
  const table = new DesiredTable<number>('t', (a, b) => a % 10 === b % 10);
  const r = new Reconciler(table, target.ops);
  table.upsert('a', 11);
  table.upsert('b', 12);
  await r.flush();
  target.data.set('a', 21); // equal for the table
  target.data.set('b', 13); // not equal
  const res = await r.prune();
  t.same(res, { pruned: 0, repaired: 1 }, 'only the entry that differs for the table is repaired');
  t.equal(target.data.get('a'), 21, 'the equal one is left as it is');
  t.equal(target.data.get('b'), 12, 'the other one is rewritten');
});
