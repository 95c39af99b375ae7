import t from 'tap';
import { Controller, Controllers, sleep } from '../../src/hive/index.js';

t.test('retry delay is linear and capped', async (t) => {
  t.equal(Controller.retryDelay(1, 100, 1000), 100);
  t.equal(Controller.retryDelay(3, 100, 1000), 300);
  t.equal(Controller.retryDelay(50, 100, 1000), 1000);
});

t.test('a failing controller retries with backoff and counts', async (t) => {
  const m = new Controllers();
  let calls = 0;
  m.updateController('sync-ipcache', {
    doFunc: () => { calls++; if (calls <= 2) throw new Error(`fail ${calls}`); },
    errorRetryBaseMs: 20,
  });
  await sleep(150);
  const [s] = m.statuses();
  t.equal(s?.name, 'sync-ipcache');
  t.equal(s?.status['failure-count'], 2);
  t.equal(s?.status['success-count'], 1);
  t.equal(s?.status['consecutive-failure-count'], 0);
  t.equal(s?.status['last-failure-msg'], 'fail 2');
  t.ok(s?.status['last-success-timestamp']);
  t.ok(s?.status['last-failure-timestamp']);
  t.type(s?.status['last-duration-ms'], 'number');
  t.equal(calls, 3, 'no run after the success without an interval');
  await m.removeAll();
});

t.test('consecutive failures grow the wait', async (t) => {
  const m = new Controllers();
  const at: number[] = [];
  m.updateController('always-failing', { doFunc: () => { at.push(Date.now()); throw new Error('down'); }, errorRetryBaseMs: 25, maxRetryIntervalMs: 1000 });
  // bounded wait for three runs (a loaded machine delays timers; they never fire early)
  for (let i = 0; i < 100 && at.length < 3; i++) await sleep(50);
  await m.removeController('always-failing');
  t.ok(at.length >= 3, `ran ${at.length} times`);
  // timers fire late under load, never early: the lower bounds are exact, the waits' order is not
  t.ok(at[1]! - at[0]! >= 25 - 1, `first wait at least the base (${at[1]! - at[0]!} ms)`);
  t.ok(at[2]! - at[1]! >= 50 - 1, `second wait at least twice the base (${at[2]! - at[1]!} ms)`);
  t.equal(m.statuses().length, 0, 'removed');
});

t.test('run interval, trigger, update and stopFunc', async (t) => {
  const m = new Controllers();
  let runs = 0;
  let stopped = false;
  m.updateController('gc', { doFunc: () => { runs++; }, runIntervalMs: 60_000, stopFunc: () => { stopped = true; } });
  await sleep(10);
  t.equal(runs, 1);
  t.ok(m.triggerController('gc'));
  t.notOk(m.triggerController('nope'));
  await sleep(10);
  t.equal(runs, 2);
  m.updateController('gc', { doFunc: () => { runs += 10; }, runIntervalMs: 60_000 });
  await sleep(10);
  t.equal(runs, 12, 'update runs the new function at once');
  await m.removeController('gc');
  t.notOk(stopped, 'stopFunc of the replaced params is not called');
  m.updateController('x', { doFunc: () => undefined, stopFunc: () => { stopped = true; } });
  await m.removeAll();
  t.ok(stopped);
});

t.test('statuses by name prefix: only the matching controllers, sorted', async (t) => {
  const m = new Controllers();
  const never = { doFunc: () => undefined, runIntervalMs: 60_000 };
  for (const name of ['endpoint-12-sync-to-k8s-ciliumendpoint', 'endpoint-1-regeneration-recovery', 'endpoint-12-regeneration-recovery', 'sync-ipcache']) m.updateController(name, never);
  t.same(m.statuses('endpoint-12-').map((s) => s.name), ['endpoint-12-regeneration-recovery', 'endpoint-12-sync-to-k8s-ciliumendpoint'], 'endpoint 12\'s two, not endpoint 1\'s');
  t.same(m.statuses('endpoint-99-'), [], 'none for another prefix');
  t.equal(m.statuses().length, 4, 'all without one');
  await m.removeAll();
});
