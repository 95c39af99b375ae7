// withTimeout and sleep (src/hive/timeout.ts): the time limit is Node's own timers/promises delay,
// and, unlike AbortSignal.timeout's unref'd timer, it keeps the process alive, so a hook hanging on
// nothing the event loop holds fails with the timeout instead of the process exiting silently.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { TimeoutError, sleep, withTimeout } from '../../src/hive/index.js';

const built = join(import.meta.dirname, '../../dist/src/hive/timeout.js');

t.test('a step that does not settle in time rejects with a TimeoutError and its signal aborts with it', async (t) => {
  let seen: AbortSignal | undefined;
  const err = await withTimeout('start of slow', 30, (signal) => {
    seen = signal;
    return new Promise(() => undefined);
  }).catch((e: unknown) => e);
  t.type(err, TimeoutError);
  t.match((err as Error).message, /start of slow timed out after 30 ms/);
  t.ok(seen?.aborted, 'the step\'s signal aborted');
  t.equal(seen?.reason, err, 'with the same error');
});

t.test('a step that settles in time gives its value or its error; a parent abort reaches its signal', async (t) => {
  t.equal(await withTimeout('quick', 1000, async () => 7), 7);
  await t.rejects(withTimeout('failing', 1000, async () => { throw new Error('boom'); }), /boom/);
  const parent = new AbortController();
  let started!: () => void;
  const running = new Promise<void>((r) => (started = r));
  const p = withTimeout('child', 1000, (signal) => new Promise((_, reject) => {
    signal.addEventListener('abort', () => reject(signal.reason as Error));
    started();
  }), parent.signal);
  await running;
  parent.abort(new Error('hive stopping'));
  await t.rejects(p, /hive stopping/);
  const ac = new AbortController();
  const s = sleep(10_000, ac.signal);
  ac.abort(new Error('stop'));
  await t.rejects(s, /stop/, 'sleep ends early with the signal\'s reason');
});

t.test('a hook hanging on nothing the event loop holds still times out (the process is not left to exit)', { skip: existsSync(built) ? false : 'dist/ not built: run npm run build (npm test builds it)' }, async (t) => {
  const script = `const { withTimeout } = await import(${JSON.stringify(pathToFileURL(built).href)});
try { await withTimeout('start of hang', 100, () => new Promise(() => {})); console.log('settled'); }
catch (e) { console.log('rejected: ' + e.message); }
await withTimeout('quick', 60000, async () => 1);
console.log('exiting');`;
  const t0 = Date.now();
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 20_000 });
  t.equal(out, 'rejected: start of hang timed out after 100 ms\nexiting\n', 'the hang is reported as a timeout');
  t.ok(Date.now() - t0 < 15_000, 'and a step that settled cancels its time limit: the process exits at once, not after 60 s');
});
