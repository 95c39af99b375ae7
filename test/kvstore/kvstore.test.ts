// The kvstore cell on a real etcd: flags and Cilium's etcd config file (errors name the field), the
// status line and the health tree following etcd going away and coming back, a session lease whose
// keys go with it, TLS with openssl-made certificates, and the disabled store without --kvstore.
import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { invoke, testHive, type TestLike } from '../../src/hive/index.js';
import { HealthTreeToken, type HealthNode } from '../../src/hive/health.js';
import { kvstoreCell, KVStoreToken, readEtcdConfig, type KVStore } from '../../src/cells/kvstore/index.js';
import { etcdSkip, makeTls, startEtcd } from './etcd.js';
import { until as pollUntil, type Poll } from '../until.js';

const use = invoke('use-kvstore', (_k: KVStore) => undefined, KVStoreToken);

function tmp(t: TestLike): string {
  const dir = mkdtempSync(join(tmpdir(), 'cellium-kvstore-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function kvHealth(root: HealthNode): HealthNode | undefined {
  return root.children.find((c) => c.name === 'kvstore');
}

const until = <T>(what: string, fn: Poll<T>, ms = 15_000): Promise<T> => pollUntil(what, fn, ms, 100);

t.test('without --kvstore the store is disabled and says so', async (t) => {
  const h = await testHive(t, [kvstoreCell, use]);
  const kv = h.get(KVStoreToken);
  t.equal(kv.enabled, false);
  t.equal(kv.status().state, 'Disabled');
  t.throws(() => kv.etcd, /needs a kvstore: start the agent with --kvstore=etcd/);
  await t.rejects(kv.session(), /needs a kvstore/);
  t.equal(kvHealth(h.get(HealthTreeToken).snapshot())?.level, 'ok');
});

t.test('bad flags and etcd config files are refused naming the field and the fix', async (t) => {
  const dir = tmp(t);
  const file = (name: string, text: string): string => {
    writeFileSync(join(dir, name), text);
    return join(dir, name);
  };
  await t.rejects(testHive(t, [kvstoreCell, use], { config: { kvstore: 'etcd' } }), /--kvstore=etcd needs --kvstore-opt=etcd.config=FILE/);
  await t.rejects(testHive(t, [kvstoreCell, use], { config: { kvstore: 'consul' } }), /expected one of , etcd/);
  await t.rejects(testHive(t, [kvstoreCell, use], { config: { 'kvstore-opt': 'etcd.cfg=x' } }), /unknown option "etcd.cfg"/);
  await t.rejects(testHive(t, [kvstoreCell, use], { config: { 'kvstore-lease-ttl': '1s' } }), /kvstore-lease-ttl.*2s or more/);
  await t.rejects(testHive(t, [kvstoreCell, use], { config: { 'node-name': 'Node_1' } }), /--node-name="Node_1": expected a lowercase name/);
  await t.rejects(testHive(t, [kvstoreCell, use], { config: { 'node-ip': '10.0.0' } }), /--node-ip="10.0.0": expected an IPv4 address/);
  t.throws(() => readEtcdConfig(join(dir, 'missing.yaml')), /missing.yaml: file: cannot read it/);
  t.throws(() => readEtcdConfig(file('a.yaml', 'endpoints: [127.0.0.1]\n')), /endpoints: "127.0.0.1" is not a URL/);
  t.throws(() => readEtcdConfig(file('b.yaml', 'endpoints: []\n')), /endpoints: expected a list of URLs/);
  t.throws(() => readEtcdConfig(file('c.yaml', 'endpoints: [https://127.0.0.1:2379]\n')), /trusted-ca-file: https endpoints need trusted-ca-file/);
  t.throws(() => readEtcdConfig(file('d.yaml', 'endpoints: [http://127.0.0.1:2379]\nendpoint: x\n')), /endpoint: unknown field/);
  t.throws(() => readEtcdConfig(file('e.yaml', 'endpoints: [https://127.0.0.1:2379]\ntrusted-ca-file: /nonexistent/ca.crt\n')), /trusted-ca-file: cannot read \/nonexistent\/ca.crt/);
  t.throws(() => readEtcdConfig(file('f.yaml', 'endpoints: [http://127.0.0.1]\n')), /give the port/);
  t.same(readEtcdConfig(file('g.yaml', 'endpoints:\n- http://127.0.0.1:2379/\n')).endpoints, ['http://127.0.0.1:2379']);
});

t.test('on a real etcd: status Ok, a session lease, degraded while etcd is down, Ok again after', { skip: etcdSkip() }, async (t) => {
  const etcd = await startEtcd(t);
  const h = await testHive(t, [kvstoreCell, use], { config: { kvstore: 'etcd', 'kvstore-opt': `etcd.config=${etcd.configFile()}`, 'kvstore-lease-ttl': '5s' } });
  const kv = h.get(KVStoreToken);
  const tree = h.get(HealthTreeToken);
  t.equal(kv.status().state, 'Ok');
  t.match(kv.status().msg, new RegExp(`^etcd: 1/1 connected, leases=0, lease-ttl=5s: ${etcd.endpoint} - 3\\.4\\.\\d+ \\(Leader\\)$`));
  t.equal(kvHealth(tree.snapshot())?.level, 'ok');

  const lease = await kv.session();
  t.equal(await kv.session(), lease, 'one session lease');
  await lease.put('cellium/test/leased').value('x');
  t.equal(await etcd.client.get('cellium/test/leased').string(), 'x');
  await until('the probe counting the lease', () => /leases=1/.test(kv.status().msg));

  await etcd.stop();
  await until('the kvstore degraded', () => kvHealth(tree.snapshot())?.level === 'degraded');
  t.equal(kv.status().state, 'Failure');
  t.match(kv.status().msg, /^etcd: 0\/1 connected/);
  t.equal(kv.connected(), false);
  await etcd.start();
  await until('the kvstore ok again', () => kvHealth(tree.snapshot())?.level === 'ok');
  t.equal(kv.status().state, 'Ok');
  t.equal(await etcd.client.get('cellium/test/leased').string(), 'x', 'the leased key outlived a short outage');

  await h.hive.stop();
  t.equal(await etcd.client.get('cellium/test/leased').string(), null, 'stopping the agent revoked its session lease');
});

t.test('TLS: etcd requiring client certificates, certificates made with openssl', { skip: etcdSkip() }, async (t) => {
  const dir = tmp(t);
  const tls = makeTls(dir);
  const etcd = await startEtcd(t, { tls });
  t.match(etcd.endpoint, /^https:/);
  const h = await testHive(t, [kvstoreCell, use], { config: { kvstore: 'etcd', 'kvstore-opt': `etcd.config=${etcd.configFile()}` } });
  const kv = h.get(KVStoreToken);
  t.equal(kv.status().state, 'Ok', kv.status().msg);
  await kv.etcd.put('cellium/test/tls').value('y');
  t.equal(await etcd.client.get('cellium/test/tls').string(), 'y');

  // the CA alone (no client certificate): etcd refuses the client
  const caOnly = join(dir, 'ca-only.yaml');
  writeFileSync(caOnly, `endpoints: [${etcd.endpoint}]\ntrusted-ca-file: ${tls.ca}\n`);
  const h2 = await testHive(t, [kvstoreCell, use], { config: { kvstore: 'etcd', 'kvstore-opt': `etcd.config=${caOnly}` } });
  t.equal(h2.get(KVStoreToken).status().state, 'Failure', 'without a client certificate etcd is unreachable');
  t.equal(kvHealth(h2.get(HealthTreeToken).snapshot())?.level, 'degraded');
});
