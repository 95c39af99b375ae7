// Resource<T>'s reflector against a scripted ListWatcher (a fake: the real apiserver is in
// resource-apiserver.test.ts): list then watch, bookmarks, 410 Gone → relist with the deletes the
// gap hid, failures → backoff and retry, late subscribers, stop.
import t from 'tap';
import { Resource, type ListWatcher, type ResourceEvent, type WatchEvent, type WatchHandle } from '../../src/cells/k8s/index.js';

interface Obj {
  metadata: { name: string; namespace?: string; resourceVersion: string };
  data?: string;
}

const obj = (name: string, rv: number, data?: string): Obj => ({ metadata: { name, namespace: 'ns', resourceVersion: String(rv) }, data });

/** A scripted apiserver: lists answer from `objects` (or fail while `failLists` > 0); watches are driven by the test. */
class FakeLW implements ListWatcher<Obj> {
  objects = new Map<string, Obj>();
  rv = 1;
  failLists = 0;
  lists = 0;
  watchesFrom: string[] = [];
  private current?: { emit: (e: WatchEvent<Obj>) => void; end: (err?: Error) => void };
  private watchWaiters: Array<() => void> = [];

  async list(): Promise<{ items: Obj[]; resourceVersion: string }> {
    this.lists++;
    if (this.failLists > 0) {
      this.failLists--;
      throw new Error('connection refused');
    }
    return { items: [...this.objects.values()], resourceVersion: String(this.rv) };
  }

  async watch(resourceVersion: string, onEvent: (ev: WatchEvent<Obj>) => void): Promise<WatchHandle> {
    this.watchesFrom.push(resourceVersion);
    let settle!: { resolve: () => void; reject: (e: Error) => void };
    const done = new Promise<void>((resolve, reject) => (settle = { resolve, reject }));
    const end = (err?: Error): void => {
      this.current = undefined;
      if (err) settle.reject(err);
      else settle.resolve();
    };
    this.current = { emit: onEvent, end };
    for (const w of this.watchWaiters.splice(0)) w();
    return { done, stop: () => end() };
  }

  /** Waits until a watch runs. */
  async watching(): Promise<void> {
    if (this.current) return;
    await new Promise<void>((r) => this.watchWaiters.push(r));
  }

  /** Changes an object on the "server" and, if a watch runs and `tell`, sends the event. */
  put(name: string, data: string, tell = true): void {
    const o = obj(name, ++this.rv, data);
    const type = this.objects.has(name) ? 'MODIFIED' : 'ADDED';
    this.objects.set(name, o);
    if (tell) this.current!.emit({ type, object: o });
  }

  del(name: string, tell = true): void {
    const o = { ...this.objects.get(name)!, metadata: { ...this.objects.get(name)!.metadata, resourceVersion: String(++this.rv) } };
    this.objects.delete(name);
    if (tell) this.current!.emit({ type: 'DELETED', object: o });
  }

  emit(e: WatchEvent<Obj>): void {
    this.current!.emit(e);
  }

  end(err?: Error): void {
    this.current!.end(err);
  }
}

/** Collects a subscription's events as short strings ("upsert ns/a 1", "delete ns/b", "sync"). */
function collect(r: Resource<Obj>): { seen: string[]; stop: () => void; completed: () => boolean } {
  const seen: string[] = [];
  let completed = false;
  const sub = r.events().subscribe({
    next: (e: ResourceEvent<Obj>) => seen.push(e.kind === 'sync' ? 'sync' : `${e.kind} ${e.key}${e.kind === 'upsert' ? ` ${e.object.data ?? ''}`.trimEnd() : ''}`),
    complete: () => (completed = true),
  });
  return { seen, stop: () => sub.unsubscribe(), completed: () => completed };
}

const tick = (): Promise<void> => new Promise((r) => setTimeout(r, 5));

t.test('list, sync, watch; late subscribers get the cache then sync', async (t) => {
  const lw = new FakeLW();
  lw.put('a', '1', false);
  lw.put('b', '1', false);
  const r = new Resource('things', lw, { minBackoffMs: 1, maxBackoffMs: 5 });
  const early = collect(r);
  t.same(early.seen, [], 'nothing before start');
  r.start();
  await r.synced;
  t.same(early.seen, ['upsert ns/a 1', 'upsert ns/b 1', 'sync'], 'the list, then sync');
  await lw.watching();
  t.equal(lw.watchesFrom[0], '3', 'the watch starts at the list\'s resourceVersion');
  lw.put('c', '1');
  lw.put('a', '2');
  lw.del('b');
  t.same(early.seen.slice(3), ['upsert ns/c 1', 'upsert ns/a 2', 'delete ns/b'], 'watch events in order');
  const late = collect(r);
  t.same(late.seen, ['upsert ns/a 2', 'upsert ns/c 1', 'sync'], 'a late subscriber gets the cache, then sync');
  const store = await r.store();
  t.same(store.list().map((o) => o.metadata.name).sort(), ['a', 'c']);
  t.equal(store.get('ns/a')?.data, '2');
  t.equal(store.size, 2);
  await r.stop();
  t.ok(early.completed() && late.completed(), 'stop completes the streams');
});

t.test('a bookmark moves the resume point; a watch the server ends resumes without a relist', async (t) => {
  const lw = new FakeLW();
  const r = new Resource('things', lw, { minBackoffMs: 1, maxBackoffMs: 5 });
  r.start();
  await r.synced;
  await lw.watching();
  lw.emit({ type: 'BOOKMARK', resourceVersion: '42' });
  lw.end();
  await tick();
  await lw.watching();
  t.same(lw.watchesFrom, ['1', '42'], 'the next watch starts at the bookmark');
  t.equal(lw.lists, 1, 'no relist');
  await r.stop();
});

t.test('410 Gone relists: what changed or vanished meanwhile becomes events, the rest stays quiet', async (t) => {
  const lw = new FakeLW();
  lw.put('keep', '1', false);
  lw.put('change', '1', false);
  lw.put('vanish', '1', false);
  const r = new Resource('things', lw, { minBackoffMs: 1, maxBackoffMs: 5 });
  const c = collect(r);
  r.start();
  await r.synced;
  await lw.watching();
  // Changes the watch never told about (as when the apiserver compacted past our version).
  lw.put('change', '2', false);
  lw.del('vanish', false);
  lw.put('new', '1', false);
  lw.emit({ type: 'ERROR', status: { code: 410, reason: 'Expired', message: 'too old resource version' } });
  await tick();
  await lw.watching();
  t.equal(lw.lists, 2, 'relisted');
  t.same(c.seen.slice(4), ['upsert ns/change 2', 'upsert ns/new 1', 'delete ns/vanish'], 'only the differences');
  t.equal(lw.watchesFrom.at(-1), String(lw.rv), 'watching from the new list');
  t.equal(r.status().failures, 0, '410 is not a failure');
  await r.stop();
});

t.test('failures back off and retry; a failed watch relists', async (t) => {
  const lw = new FakeLW();
  lw.put('a', '1', false);
  lw.failLists = 3;
  const errors: string[] = [];
  const r = new Resource('things', lw, { minBackoffMs: 1, maxBackoffMs: 5, onError: (e) => errors.push(e.message) });
  r.start();
  await r.synced;
  t.equal(lw.lists, 4, 'three failed lists, then one that worked');
  t.same(errors, ['connection refused', 'connection refused', 'connection refused'], 'each failure reported');
  t.equal(r.status().failures, 3);
  await lw.watching();
  lw.end(new Error('connection reset'));
  await tick();
  await lw.watching();
  t.equal(lw.lists, 5, 'a failed watch relists');
  t.match(errors.at(-1), /watch of things failed: connection reset/);
  lw.emit({ type: 'ERROR', status: { code: 500, reason: 'InternalError', message: 'etcd down' } });
  await tick();
  await lw.watching();
  t.equal(lw.lists, 6, 'an error event other than 410 relists after a backoff');
  t.match(errors.at(-1), /500 InternalError etcd down/);
  await r.stop();
});

t.test('stop while failing ends at once', async (t) => {
  const lw = new FakeLW();
  lw.failLists = 1_000_000;
  const r = new Resource('things', lw, { minBackoffMs: 60_000, maxBackoffMs: 60_000 });
  r.start();
  await tick();
  const started = Date.now();
  await r.stop();
  t.ok(Date.now() - started < 5000, 'stop does not wait out the backoff');
  t.equal(r.status().synced, false, 'never synced: the cache never claimed to be complete');
});

t.test('stop aborts a list in flight', async (t) => {
  let aborted = false;
  const hanging: ListWatcher<Obj> = {
    list: (signal?: AbortSignal) => new Promise((_resolve, reject) => {
      signal?.addEventListener('abort', () => {
        aborted = true;
        reject(new Error('aborted'));
      });
    }),
    watch: () => Promise.reject(new Error('not reached')),
  };
  const r = new Resource('things', hanging);
  r.start();
  await tick();
  await r.stop();
  t.ok(aborted, 'the list was aborted, so stop did not wait for it');
});
