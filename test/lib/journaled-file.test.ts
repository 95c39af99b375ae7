// The snapshot + journal behind the embedded identity table: appends are coalesced and durable when
// they resolve, the journal is compacted into the snapshot once it is as long as the table (and at
// close), a torn last line is dropped, a journal naming another snapshot (a compaction cut short)
// is ignored, a bad line fails the load, and a kill -9 in the middle of a burst keeps every
// acknowledged record.
import t from 'tap';
import { spawn } from 'node:child_process';
import { appendFileSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EmbeddedBackend } from '../../src/cells/identity/index.js';
import { JournaledFile } from '../../src/lib/journaled-file.js';
import { TS_LOADER_ARGV } from '../loader/argv.js';

function tempDir(t: { teardown(fn: () => void): void }, base = tmpdir()): string {
  const dir = mkdtempSync(join(base, 'cellium-unit-journal-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A set of strings kept by a journal: the snapshot is its sorted JSON array. */
class StringSet {
  readonly items = new Set<string>();
  readonly file: JournaledFile;
  renders = 0;
  constructor(path: string) {
    this.file = new JournaledFile(path, { render: () => (this.renders++, `${JSON.stringify([...this.items].sort())}\n`), size: () => this.items.size });
  }
  async load(): Promise<string | undefined> {
    const l = await this.file.load();
    for (const s of l.snapshot ? (JSON.parse(l.snapshot) as string[]) : []) this.items.add(s);
    for (const r of l.records as Array<{ add?: string; del?: string }>) {
      if (r.add) this.items.add(r.add);
      if (r.del) this.items.delete(r.del);
    }
    return l.ignored;
  }
  add(s: string): Promise<void> {
    this.items.add(s);
    return this.file.append({ add: s });
  }
  del(s: string): Promise<void> {
    this.items.delete(s);
    return this.file.append({ del: s });
  }
}

for (const where of ['disk', 'tmpfs'] as const) {
  const base = where === 'tmpfs' ? '/dev/shm' : tmpdir();
  t.test(`${where}: appends are coalesced, reloaded, compacted once the journal outgrows the table, and at close`, async (t) => {
    const path = join(tempDir(t, base), 'set.json');
    const a = new StringSet(path);
    t.equal(await a.load(), undefined);
    await Promise.all(Array.from({ length: 10 }, (_, i) => a.add(`x${i}`)));
    t.equal(a.renders, 1, 'the first burst after a load without a journal writes a snapshot');
    t.same(JSON.parse(readFileSync(path, 'utf8')), [...a.items].sort());
    const journalLines = (): number => readFileSync(`${path}.journal`, 'utf8').split('\n').length - 2;
    t.equal(journalLines(), 0, 'and a fresh journal');
    await Promise.all([a.add('y1'), a.add('y2'), a.del('x3')]);
    t.equal(a.renders, 1, 'a later burst appends');
    t.equal(journalLines(), 3, 'three records, one write');
    const b = new StringSet(path);
    await b.load();
    t.same([...b.items].sort(), [...a.items].sort(), 'a reload replays the journal over the snapshot');
    for (let i = 0; i < 10; i++) await a.add(`z${i}`);
    t.equal(a.renders, 1, 'adds alone never make the journal longer than the table');
    for (let i = 0; i < 10; i++) await a.del(`z${i}`);
    t.equal(a.renders, 2, 'removals do: compacted once the journal outgrew the table (at least 16 records)');
    t.equal(journalLines(), 5, 'the records since');
    await a.file.close();
    t.equal(journalLines(), 0, 'close compacts');
    t.same(JSON.parse(readFileSync(path, 'utf8')), [...a.items].sort(), 'the snapshot alone is complete after close');
    t.same(readdirSync(join(path, '..')).sort(), ['set.json', 'set.json.journal'], 'no temporary file left');
  });
}

t.test('a torn last line is dropped; a bad line in the middle fails the load naming the line', async (t) => {
  const path = join(tempDir(t), 'set.json');
  const a = new StringSet(path);
  await a.load();
  await a.add('one');
  await a.add('two');
  await a.file.idle();
  appendFileSync(`${path}.journal`, '{"add":"th');
  const b = new StringSet(path);
  await b.load();
  t.same([...b.items].sort(), ['one', 'two'], 'the torn record (never acknowledged) is not there');
  // a later append after the torn bytes (the writer never does that: a failed append compacts next)
  appendFileSync(`${path}.journal`, '\n{"add":"four"}\n');
  const c = new StringSet(path);
  await t.rejects(c.load(), /set\.json\.journal: line 3 is not JSON/);
});

t.test('a journal naming another snapshot (a compaction cut short between the two files) is ignored', async (t) => {
  const path = join(tempDir(t), 'set.json');
  const a = new StringSet(path);
  await a.load();
  await a.add('one');
  await a.add('two');
  // the snapshot a compaction would write holds the journal's records; the crash kept the old journal
  writeFileSync(path, `${JSON.stringify(['one', 'two'])}\n`);
  const b = new StringSet(path);
  t.match(await b.load(), /extends another snapshot/);
  t.same([...b.items].sort(), ['one', 'two']);
  await b.add('three');
  const c = new StringSet(path);
  await c.load();
  t.same([...c.items].sort(), ['one', 'three', 'two'], 'the next write starts a journal for the snapshot in place');
});

t.test('a bad header fails the load', async (t) => {
  const path = join(tempDir(t), 'set.json');
  writeFileSync(`${path}.journal`, 'nonsense\n');
  await t.rejects(new StringSet(path).load(), /line 1 is not a journal header/);
});

t.test('kill -9 during bursts of identity claims: every acknowledged claim is restored, the table loads', async (t) => {
  for (const base of [tmpdir(), '/dev/shm']) {
    const file = join(tempDir(t, base), 'identities.json');
    const child = spawn(process.execPath, [...TS_LOADER_ARGV, fileURLToPath(new URL('./journaled-file-child.ts', import.meta.url)), file], { stdio: ['ignore', 'pipe', 'pipe'] });
    const acked: number[] = [];
    let err = '';
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    const exited = new Promise<NodeJS.Signals | null>((r) => child.once('exit', (_code, sig) => r(sig)));
    await new Promise<void>((resolve) => {
      let buf = '';
      child.stdout.on('data', (c: Buffer) => {
        buf += c.toString();
        const lines = buf.split('\n');
        buf = lines.pop()!;
        for (const l of lines) acked.push(Number(l.split(' ')[1]));
        // past a few compactions, in the middle of a burst
        if (acked.length >= 300 && acked.length % 8 === 3) resolve();
      });
      child.once('exit', () => resolve());
    });
    child.kill('SIGKILL');
    t.equal(await exited, 'SIGKILL', `${base}: killed (${err})`);
    const b = new EmbeddedBackend(file);
    const ids = new Set((await b.load()).map((s) => s.id));
    const missing = acked.filter((id) => !ids.has(id));
    t.same(missing, [], `${base}: all ${acked.length} acknowledged identities restored (${ids.size} in the table)`);
    t.ok([...ids].every((id) => id >= 1000), 'nothing else');
    await b.close();
  }
});
