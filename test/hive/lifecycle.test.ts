import t from 'tap';
import {
  Hive, module, provide, invoke, token, LifecycleToken, type Lifecycle, silentLogger, StartError, StopError, type Hook,
} from '../../src/hive/index.js';

/** A cell whose provider appends one hook recording its start/stop into `events`. */
function hookCell(id: string, events: string[], dep: ReturnType<typeof token<string>> | undefined, hook: Partial<Hook> = {}) {
  const tok = token<string>(id);
  const factory = (lc: Lifecycle, ..._deps: string[]) => {
    lc.append({
      name: `${id}-hook`,
      onStart: hook.onStart ?? (() => { events.push(`start ${id}`); }),
      onStop: hook.onStop ?? (() => { events.push(`stop ${id}`); }),
      timeout: hook.timeout,
    });
    return id;
  };
  const cell = dep
    ? module(id, id, provide(tok, factory as (lc: Lifecycle, d: string) => string, LifecycleToken, dep))
    : module(id, id, provide(tok, factory as (lc: Lifecycle) => string, LifecycleToken));
  return { tok, cell };
}

const run = (...cells: Parameters<typeof module>[2][]) => new Hive(cells, { logger: silentLogger() });

t.test('start hooks run in dependency order, stop hooks in reverse', async (t) => {
  const ev: string[] = [];
  const a = hookCell('aa', ev, undefined);
  const b = hookCell('bb', ev, a.tok);
  const c = hookCell('cc', ev, b.tok);
  // declared in reverse: construction (and so hook) order still follows dependencies
  const h = run(c.cell, b.cell, a.cell, invoke('use', (_c: string) => undefined, c.tok));
  await h.start();
  await h.stop();
  t.same(ev, ['start aa', 'start bb', 'start cc', 'stop cc', 'stop bb', 'stop aa']);
});

t.test('a failed start stops what started, in reverse, and names module, cell and hook', async (t) => {
  const ev: string[] = [];
  const a = hookCell('aa', ev, undefined);
  const b = hookCell('bb', ev, a.tok);
  const c = hookCell('cc', ev, b.tok, { onStart: () => { throw new Error('port in use'); } });
  const d = hookCell('dd', ev, c.tok);
  const h = run(a.cell, b.cell, c.cell, d.cell, invoke('use', (_d: string) => undefined, d.tok));
  const err = await h.start().then(() => undefined, (e: unknown) => e);
  t.type(err, StartError);
  t.match((err as Error).message, /module "cc" cell "factory" hook "cc-hook".*port in use/);
  t.same(ev, ['start aa', 'start bb', 'stop bb', 'stop aa'], 'rollback in reverse; dd never started; cc not stopped');
});

t.test('a hook that exceeds its timeout fails the start', async (t) => {
  const ev: string[] = [];
  let aborted = false;
  const slow = hookCell('slow', ev, undefined, {
    timeout: 50,
    onStart: ({ signal }) => new Promise<void>((resolve) => signal.addEventListener('abort', () => { aborted = true; resolve(); })),
  });
  const h = run(slow.cell, invoke('use', (_s: string) => undefined, slow.tok));
  await t.rejects(h.start(), /start of module "slow".*timed out after 50 ms/);
  t.ok(aborted, 'the hook saw its signal abort');
});

t.test('the hive-wide hook timeout comes from configuration', async (t) => {
  const slow = hookCell('slow', [], undefined, { onStart: () => new Promise<void>((r) => setTimeout(r, 500)) });
  const h = run(slow.cell, invoke('use', (_s: string) => undefined, slow.tok));
  h.configure({ argv: ['--hive-hook-timeout=30ms'] });
  await t.rejects(h.start(), /timed out after 30 ms/);
});

t.test('stop goes on past errors and reports all of them', async (t) => {
  const ev: string[] = [];
  const a = hookCell('aa', ev, undefined);
  const b = hookCell('bb', ev, a.tok, { onStop: () => { throw new Error('b broke'); } });
  const c = hookCell('cc', ev, b.tok, { onStop: () => { throw new Error('c broke'); } });
  const h = run(a.cell, b.cell, c.cell, invoke('use', (_c: string) => undefined, c.tok));
  await h.start();
  const err = await h.stop().then(() => undefined, (e: unknown) => e);
  t.type(err, StopError);
  t.equal((err as StopError).errors.length, 2);
  t.match((err as Error).message, /c broke[\s\S]*b broke/);
  t.same(ev, ['start aa', 'start bb', 'start cc', 'stop aa'], 'aa still stopped after cc and bb failed');
});

t.test('run() returns the error a cell shut down with', async (t) => {
  const { ShutdownerToken } = await import('../../src/hive/index.js');
  const Svc = token<string>('Svc');
  const h = run(module('svc', 'Svc', provide(Svc, (lc: Lifecycle, s: { shutdown(e?: Error): void }) => {
    lc.append({ onStart: () => { setTimeout(() => s.shutdown(new Error('fatal: lost the datapath')), 10); } });
    return 'svc';
  }, LifecycleToken, ShutdownerToken)), invoke('use', (_s: string) => undefined, Svc));
  const err = await h.run([]);
  t.match(err?.message, /lost the datapath/);
});

t.test('after the start, a stop-only hook still runs at stop; a start hook is refused', async (t) => {
  const ev: string[] = [];
  const Late = token<string>('Late');
  const Later = token<string>('Later');
  const h = run(
    module('late', 'Late', provide(Late, (lc: Lifecycle) => { lc.append({ name: 'close', onStop: () => { ev.push('stop late'); } }); return 'late'; }, LifecycleToken)),
    module('later', 'Later', provide(Later, (lc: Lifecycle) => { lc.append({ name: 'open', onStart: () => { ev.push('start later'); } }); return 'later'; }, LifecycleToken)),
  );
  await h.start();
  t.equal(h.get(Late), 'late');
  t.throws(() => h.get(Later), /hook "open" was appended after the hive started, so it would never start/);
  await h.stop();
  t.same(ev, ['stop late']);
});
