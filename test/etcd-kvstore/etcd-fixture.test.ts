// The test etcd itself: it starts on free loopback ports, answers, stops and starts again with its data.
import t from 'tap';
import { etcdSkip, startEtcd } from '../kvstore/etcd.js';

t.test('a test etcd starts, keeps its data across stop/start, and is stopped at teardown', { skip: etcdSkip() }, async (t) => {
  const etcd = await startEtcd(t);
  t.match(etcd.endpoint, /^http:\/\/127\.0\.0\.1:\d+$/);
  await etcd.client.put('cellium/test/a').value('1');
  t.equal(await etcd.client.get('cellium/test/a').string(), '1');
  await etcd.stop();
  t.notOk(etcd.running(), 'stopped');
  await etcd.start();
  t.ok(etcd.running(), 'started again');
  t.equal(await etcd.client.get('cellium/test/a').string(), '1', 'data kept');
});
