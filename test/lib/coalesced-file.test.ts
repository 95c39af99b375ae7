// The coalescing atomic writer behind the service, policy and identity stores: a burst is one
// write of the latest content, a synchronous write is never overwritten by a background one that
// started before it, a failure is reported, kept as lastError and cleared by the next success, and
// no temporary file is left behind.
import t from 'tap';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoalescedFile } from '../../src/lib/coalesced-file.js';

function tempDir(t: { teardown(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'cellium-unit-coalesced-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

t.test('a burst of changes is one write of the latest content', async (t) => {
  const file = join(tempDir(t), 'state.json');
  const w = new CoalescedFile(file);
  let renders = 0;
  for (let i = 1; i <= 100; i++) w.schedule(() => `${++renders}:${i}\n`);
  await w.idle();
  t.equal(renders, 1, 'rendered once');
  t.equal(readFileSync(file, 'utf8'), '1:100\n', 'the latest change is on disk');
  w.schedule(() => 'next\n');
  await w.idle();
  t.equal(readFileSync(file, 'utf8'), 'next\n', 'a later burst is written again');
  t.same(readdirSync(join(file, '..')), ['state.json'], 'no temporary file left');
  t.equal(w.lastError, undefined);
});

t.test('a change scheduled while a write runs is written after it', async (t) => {
  const file = join(tempDir(t), 'state.json');
  const w = new CoalescedFile(file);
  const seen: string[] = [];
  w.schedule(() => {
    seen.push('first');
    w.schedule(() => (seen.push('second'), 'second\n'));
    return 'first\n';
  });
  await w.idle();
  t.same(seen, ['first', 'second'], 'both rendered, in order');
  t.equal(readFileSync(file, 'utf8'), 'second\n');
});

t.test('a synchronous write is not overwritten by a background write that started before it', async (t) => {
  const file = join(tempDir(t), 'state.json');
  const w = new CoalescedFile(file);
  w.schedule(() => 'background\n');
  await new Promise<void>((r) => setImmediate(r)); // the background write has started
  w.writeSync('sync\n');
  t.equal(readFileSync(file, 'utf8'), 'sync\n', 'on disk when writeSync returns');
  await w.idle();
  t.equal(readFileSync(file, 'utf8'), 'sync\n', 'the older background write was dropped');
  t.same(readdirSync(join(file, '..')), ['state.json'], 'its temporary file removed');
  w.schedule(() => 'later\n');
  await w.idle();
  t.equal(readFileSync(file, 'utf8'), 'later\n', 'a background write started after it lands');
});

t.test('a failed write is reported, kept as lastError, and cleared by the next success', async (t) => {
  const dir = tempDir(t);
  const blocker = join(dir, 'not-a-dir');
  writeFileSync(blocker, '');
  const file = join(blocker, 'state.json');
  const errors: Error[] = [];
  const w = new CoalescedFile(file, (err) => errors.push(err));
  w.schedule(() => 'x\n');
  await w.idle();
  t.equal(errors.length, 1, 'onError told once');
  t.match(w.lastError?.message, /ENOTDIR|EEXIST/, 'lastError is the file system error');
  t.throws(() => w.writeSync('y\n'), /ENOTDIR|EEXIST/, 'writeSync throws');
  rmSync(blocker);
  w.schedule(() => 'z\n');
  await w.idle();
  t.equal(w.lastError, undefined, 'cleared by the next success');
  t.equal(readFileSync(file, 'utf8'), 'z\n');
});
