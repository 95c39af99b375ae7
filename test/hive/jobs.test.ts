import t from 'tap';
import { Subject } from 'rxjs';
import {
  Hive, module, provide, invoke, token, JobsToken, HealthTreeToken, type Jobs, type Trigger, type HealthTree, silentLogger, sleep,
} from '../../src/hive/index.js';

function jobsHive(setup: (jobs: Jobs) => void) {
  const Setup = token<true>('JobSetup');
  return new Hive([
    module('worker', 'Worker', provide(Setup, (j: Jobs) => { setup(j); return true as const; }, JobsToken)),
    invoke('setup', (_s: true) => undefined, Setup),
  ], { logger: silentLogger() });
}

t.test('one-shot jobs retry with backoff until they succeed', async (t) => {
  const attempts: number[] = [];
  let done!: () => void;
  const finished = new Promise<void>((r) => (done = r));
  const h = jobsHive((j) => j.oneShot('sync', async () => {
    attempts.push(Date.now());
    if (attempts.length < 3) throw new Error(`try ${attempts.length} failed`);
    done();
  }, { retries: 5, backoff: { minMs: 20, maxMs: 1000 } }));
  await h.start();
  await finished;
  t.equal(attempts.length, 3);
  t.ok(attempts[1]! - attempts[0]! >= 15 && attempts[2]! - attempts[1]! >= 35, 'second wait is about twice the first');
  await h.stop();
});

t.test('a one-shot job that exhausts its retries can shut the hive down', async (t) => {
  const h = jobsHive((j) => j.oneShot('must-work', async () => { throw new Error('no datapath'); }, { retries: 1, backoff: { minMs: 5, maxMs: 5 }, shutdownOnError: true }));
  const err = await h.run([]);
  t.match(err?.message, /job worker\/must-work failed: no datapath/);
});

t.test('jobs start after the start hooks and stop before the stop hooks', async (t) => {
  const ev: string[] = [];
  const { LifecycleToken } = await import('../../src/hive/index.js');
  const Svc = token<true>('Svc');
  const h = new Hive([
    module('svc', 'Svc', provide(Svc, (lc: { append(h: object): void }, j: Jobs) => {
      j.oneShot('job', async ({ signal }) => {
        ev.push('job start');
        await new Promise<void>((r) => signal.addEventListener('abort', () => r()));
        ev.push('job stopped');
      });
      lc.append({ onStart: () => { ev.push('hook start'); }, onStop: () => { ev.push('hook stop'); } });
      return true as const;
    }, LifecycleToken, JobsToken)),
    invoke('svc', (_s: true) => undefined, Svc),
  ], { logger: silentLogger() });
  await h.start();
  await sleep(10);
  await h.stop();
  t.same(ev, ['hook start', 'job start', 'job stopped', 'hook stop']);
});

t.test('timer jobs run on their interval and a manual trigger is debounced', async (t) => {
  let runs = 0;
  let trigger!: Trigger;
  const h = jobsHive((j) => { trigger = j.timer('resync', async () => { runs++; }, 60_000, { debounceMs: 30 }); });
  await h.start();
  for (let i = 0; i < 10; i++) trigger.trigger();
  await sleep(100);
  t.equal(runs, 1, 'ten triggers within the debounce window run once');
  trigger.trigger();
  await sleep(100);
  t.equal(runs, 2, 'a later trigger runs again');
  await h.stop();

  let ticks = 0;
  const h2 = jobsHive((j) => { j.timer('tick', async () => { ticks++; }, 20); });
  await h2.start();
  await sleep(130);
  await h2.stop();
  t.ok(ticks >= 2, `interval ran repeatedly (${ticks})`);
});

t.test('observer jobs handle every value and report handler failures in health', async (t) => {
  const src = new Subject<number>();
  const seen: number[] = [];
  const h = jobsHive((j) => j.observer('numbers', src, (n) => {
    if (n < 0) throw new Error('negative');
    seen.push(n);
  }));
  const tree: HealthTree = h.get(HealthTreeToken);
  await h.start();
  src.next(1); src.next(2); src.next(-1); src.next(3);
  await sleep(10);
  t.same(seen, [1, 2, 3]);
  const worker = tree.snapshot().children.find((c) => c.name === 'worker');
  const obs = worker?.children.find((c) => c.name === 'observer-numbers');
  t.equal(obs?.level, 'degraded');
  t.match(obs?.message, /negative/);
  t.equal(worker?.level, 'degraded', 'the module shows its worst child');
  await h.stop();
});

t.test('a sync observer whose handler returns a value that is no promise handles it without a failure', async (t) => {
  const src = new Subject<number>();
  let count = 0;
  // as a handler written `(n) => counter.inc(n)` does: prom-client's inc() returns an object
  const h = jobsHive((j) => j.observer('counting', src, ((n: number) => ({ counted: (count += n) })) as unknown as (n: number) => void, { sync: true }));
  const tree: HealthTree = h.get(HealthTreeToken);
  await h.start();
  src.next(1); src.next(2);
  t.equal(count, 3, 'both values handled');
  const obs = tree.snapshot().children.find((c) => c.name === 'worker')?.children.find((c) => c.name === 'observer-counting');
  t.equal(obs?.level, 'ok', 'no "handler failed" (it was r.catch is not a function)');
  await h.stop();
});

t.test('an immediate observer sees values emitted during the start hooks; a sync one handles them inside next', async (t) => {
  const { LifecycleToken } = await import('../../src/hive/index.js');
  const src = new Subject<number>();
  const immediate: number[] = [];
  const late: number[] = [];
  const Svc = token<true>('Svc');
  const h = new Hive([
    module('svc', 'Svc', provide(Svc, (lc: { append(h: object): void }, j: Jobs) => {
      j.observer('immediate', src, (n) => { immediate.push(n); }, { immediate: true, sync: true });
      j.observer('late', src, (n) => { late.push(n); });
      lc.append({ onStart: () => { src.next(1); } });
      return true as const;
    }, LifecycleToken, JobsToken)),
    invoke('svc', (_s: true) => undefined, Svc),
  ], { logger: silentLogger() });
  const tree: HealthTree = h.get(HealthTreeToken);
  await h.start();
  t.same(immediate, [1], 'the value a start hook emitted reached the immediate observer');
  t.same(late, [], 'an ordinary observer subscribes when the jobs start');
  src.next(2);
  t.same(immediate, [1, 2], 'a sync observer has handled the value when next returns');
  await sleep(5);
  t.same(late, [2]);
  t.ok(h.jobs().includes('svc: immediate'), 'listed with the module\'s jobs');
  await h.stop();
  src.next(3);
  t.same(immediate, [1, 2], 'unsubscribed at stop');
  const svc = tree.snapshot().children.find((c) => c.name === 'svc');
  t.ok(svc?.children.some((c) => c.name === 'observer-immediate'), 'has a health node of its own');
});

t.test('an immediate observer of a hive whose start failed is unsubscribed', async (t) => {
  const { LifecycleToken } = await import('../../src/hive/index.js');
  const src = new Subject<number>();
  const seen: number[] = [];
  const Svc = token<true>('Svc');
  const h = new Hive([
    module('svc', 'Svc', provide(Svc, (lc: { append(h: object): void }, j: Jobs) => {
      j.observer('immediate', src, (n) => { seen.push(n); }, { immediate: true, sync: true });
      lc.append({ onStart: () => { throw new Error('no datapath'); } });
      return true as const;
    }, LifecycleToken, JobsToken)),
    invoke('svc', (_s: true) => undefined, Svc),
  ], { logger: silentLogger() });
  await t.rejects(h.start());
  src.next(1);
  t.same(seen, [], 'nothing handled after the failed start');
  t.equal(src.observed, false, 'no subscriber left on the source');
});
