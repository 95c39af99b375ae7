// PrefixMirror (list-then-watch): follows puts and deletes; when its connection is cut and the
// revision it would resume from was compacted meanwhile, etcd cancels the watch and the mirror lists
// the prefix again, emitting deletes for keys that vanished and upserts for new ones. A copy known
// wrong whose re-list fails is dropped (fail closed); verify() finds a copy that missed a change.
import t from 'tap';
import { createServer, connect, type Socket } from 'node:net';
import { Etcd3 } from 'etcd3';
import { PrefixMirror, type MirrorEvent } from '../../src/cells/kvstore/index.js';
import { silentLogger, type TestLike } from '../../src/hive/index.js';
import { etcdSkip, startEtcd } from '../kvstore/etcd.js';
import { until as pollUntil, type Poll } from '../until.js';

const until = <T>(what: string, fn: Poll<T>, ms = 20_000): Promise<T> => pollUntil(what, fn, ms, 20);

/** A TCP proxy to etcd whose connections the test can cut (and refuse while blocked). */
async function proxy(target: URL): Promise<{ url: string; block(): void; unblock(): void; close(): void }> {
  const open = new Set<Socket>();
  let blocked = false;
  const server = createServer((client) => {
    if (blocked) return client.destroy();
    const up = connect(Number(target.port), target.hostname);
    for (const s of [client, up]) {
      open.add(s);
      s.on('close', () => open.delete(s));
      s.on('error', () => s.destroy());
    }
    client.pipe(up).pipe(client);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    block() {
      blocked = true;
      for (const s of open) s.destroy();
    },
    unblock() {
      blocked = false;
    },
    close() {
      for (const s of open) s.destroy();
      server.close();
    },
  };
}

/** etcd with `keys` under `prefix`, a proxy to it, and a started mirror of the prefix through the proxy (all torn down). */
async function mirrored(t: TestLike, prefix: string, keys: Record<string, string>) {
  const etcd = await startEtcd(t);
  const p = await proxy(new URL(etcd.endpoint));
  t.teardown(() => p.close());
  const client = new Etcd3({ hosts: p.url });
  t.teardown(() => client.close());
  for (const [k, v] of Object.entries(keys)) await etcd.client.put(`${prefix}${k}`).value(v);
  const m = new PrefixMirror({ etcd: client }, prefix, silentLogger());
  const events: MirrorEvent[] = [];
  m.events$.subscribe((e) => events.push(e));
  await m.start();
  t.teardown(() => m.stop());
  return { etcd, p, m, events };
}

t.test('the mirror follows changes and resyncs after a compacted revision', { skip: etcdSkip() }, async (t) => {
  const { etcd, p, m, events } = await mirrored(t, 'cellium/m/', { a: '1', b: '2' });
  t.same([...m.entries], [['a', '1'], ['b', '2']], 'listed');
  await etcd.client.put('cellium/m/c').value('3');
  await etcd.client.delete().key('cellium/m/a');
  await until('the watch to deliver', () => m.entries.has('c') && !m.entries.has('a'));
  t.equal(m.lists, 1);

  // cut the mirror off, change and compact behind its back, let it reconnect
  p.block();
  await etcd.client.delete().key('cellium/m/b');
  await etcd.client.put('cellium/m/d').value('4');
  const rev = (await etcd.client.get('cellium/m/d').exec()).header.revision;
  await etcd.client.kv.compact({ revision: rev, physical: true });
  events.length = 0;
  p.unblock();
  await until('the mirror to resync', () => m.lists === 2 && m.entries.has('d') && !m.entries.has('b'));
  t.same([...m.entries].sort(), [['c', '3'], ['d', '4']], 'the copy matches etcd again');
  t.same(events.map((e) => `${e.kind} ${e.key}`).sort(), ['delete b', 'upsert d'], 'the vanished key is emitted as a delete, the new one as an upsert');
  await etcd.client.put('cellium/m/e').value('5');
  await until('the new watch to deliver', () => m.entries.get('e') === '5');
});

t.test('a copy known wrong that cannot be listed is dropped (fail closed), and listed once etcd answers', { skip: etcdSkip() }, async (t) => {
  const { etcd, p, m, events } = await mirrored(t, 'cellium/w/', { a: '1' });
  t.same([...m.entries], [['a', '1']]);
  t.equal(await m.verify(), undefined, 'the copy matches etcd at its revision');

  p.block();
  void m.resync('test: the store was replaced', true);
  await until('the entries to be dropped', () => m.entries.size === 0);
  t.same(events.map((e) => `${e.kind} ${e.key}`), ['upsert a', 'delete a'], 'dropped as deletes while etcd cannot be listed');
  t.equal(m.status().state, 'resyncing');
  p.unblock();
  await until('the prefix listed again', () => m.entries.get('a') === '1' && m.status().state === 'watching');
  t.pass('listed again once etcd answers');

  // a key put behind the watch's back (the copy's count at its revision differs): verify says so
  await etcd.client.put('cellium/w/b').value('2');
  await until('the watch to deliver', () => m.entries.has('b'));
  m.entries.delete('b');
  t.match(await m.verify(), /^wrong: the watch missed changes: etcd has 2 keys under the prefix at revision \d+, the mirror 1/);
});
