// Faults: etcd stopped and started under a running agent (known identities keep working, a new
// label set fails with a clear error after a bounded wait and succeeds once etcd is back, the
// agent's keys and watches come back), and an agent that stops renewing its lease (hive stopped
// without revoking: what kill -9 leaves) whose records expire on the other node after the TTL.
import t from 'tap';
import { DatapathToken, ReservedIdentity } from '../../src/datapath/types.js';
import { HealthTreeToken } from '../../src/hive/health.js';
import { KEYS, KVStoreToken } from '../../src/cells/kvstore/index.js';
import type { TestLike } from '../../src/hive/index.js';
import { podRequest, startAgent, type TestAgent } from '../api-integration/agent.js';
import { etcdSkip, startEtcd, type TestEtcd } from '../kvstore/etcd.js';
import { until as pollUntil, type Poll } from '../until.js';

const until = <T>(what: string, fn: Poll<T>, ms = 20_000): Promise<T> => pollUntil(what, fn, ms, 50);

function node(t: TestLike, etcd: TestEtcd, name: string, ip: string, range: string, extra: Record<string, unknown> = {}): Promise<TestAgent> {
  return startAgent(t, { kvstore: 'etcd', 'kvstore-opt': `etcd.config=${etcd.configFile()}`, 'node-name': name, 'node-ip': ip, 'ipv4-range': range, 'ipv6-range': '', ...extra });
}

async function hasIP(a: TestAgent, cidr: string): Promise<boolean> {
  return (await a.client.ipList()).some((e) => e.cidr === cidr);
}

t.test('etcd stopped and started under two agents', { skip: etcdSkip() }, async (t) => {
  const etcd = await startEtcd(t);
  const a = await node(t, etcd, 'node-a', '10.163.0.1', '10.164.1.0/24');
  const b = await node(t, etcd, 'node-b', '10.163.0.2', '10.164.2.0/24');
  await a.client.createEndpoint(1, podRequest(1, { ipv4: '10.164.1.10' }, { labels: ['k8s:app=web'] }));
  await until('b to see a\'s pod', () => hasIP(b, '10.164.1.10/32'));

  await etcd.stop();
  const tree = a.h.get(HealthTreeToken);
  await until('a\'s kvstore degraded', () => tree.snapshot().children.find((c) => c.name === 'infra')?.children.find((c) => c.name === 'kvstore')?.level === 'degraded');
  t.match((await a.client.status()).kvstore, { state: 'Failure', msg: /^etcd: 0\/1 connected/ }, 'the status says etcd is unreachable');

  // known labels: the endpoint is created from the local cache, without etcd
  const known = await a.client.createEndpoint(2, podRequest(2, { ipv4: '10.164.1.11' }, { labels: ['k8s:app=web'] }));
  t.equal(known.status?.state, 'ready', 'an endpoint with a known identity is created while etcd is down');
  t.ok(await hasIP(b, '10.164.1.10/32'), 'b keeps serving what it knew');

  // unknown labels: fails with a clear error after a bounded wait
  const began = Date.now();
  const failed = await a.client.createEndpoint(3, podRequest(3, { ipv4: '10.164.1.12' }, { labels: ['k8s:app=new'] })).then(() => undefined, (err: Error) => err);
  t.ok(failed, 'a new label set cannot get an identity while etcd is down');
  t.match(failed?.message, /kvstore: .*(claiming|creating) identity .*failed.*check that etcd is running/);
  t.ok(Date.now() - began < 30_000, `bounded wait (${Date.now() - began} ms)`);

  await etcd.start();
  await until('a\'s kvstore ok again', () => tree.snapshot().children.find((c) => c.name === 'infra')?.children.find((c) => c.name === 'kvstore')?.level === 'ok');
  const created = await a.client.createEndpoint(3, podRequest(3, { ipv4: '10.164.1.12' }, { labels: ['k8s:app=new'] }));
  t.equal(created.status?.state, 'ready', 'the new label set gets its identity once etcd is back');
  // watches resumed: b learns the endpoints made during and after the outage
  await until('b to see the pods made during and after the outage', async () => (await hasIP(b, '10.164.1.11/32')) && hasIP(b, '10.164.1.12/32'));
  const newId = created.status?.identity?.id;
  await until('b to know the new identity', async () => (await b.client.listIdentities()).some((i) => i.id === newId));
});

t.test('an agent that stops renewing its lease: its records expire on the other node after the TTL', { skip: etcdSkip() }, async (t) => {
  const etcd = await startEtcd(t);
  const a = await node(t, etcd, 'node-a', '10.163.1.1', '10.164.3.0/24', { 'kvstore-lease-ttl': '3s' });
  const b = await node(t, etcd, 'node-b', '10.163.1.2', '10.164.4.0/24', { 'kvstore-lease-ttl': '3s' });
  await a.client.createEndpoint(1, podRequest(1, { ipv4: '10.164.3.10' }, { labels: ['k8s:app=web'] }));
  await until('b to see a\'s pod and node', async () => (await hasIP(b, '10.164.3.10/32')) && hasIP(b, '10.163.1.1/32'));
  const dp = b.h.get(DatapathToken);
  const ipcache = async () => new Map(((await dp.maps.get('cellium_ipcache'))?.entries ?? []).map((e) => [e.key, e.value]));
  t.equal((await ipcache()).get('10.164.3.10/32'), `identity=${(await a.client.getEndpoint(1)).status?.identity?.id}`, 'a\'s pod in b\'s datapath ipcache');
  t.equal((await ipcache()).get('10.163.1.1/32'), `identity=${ReservedIdentity.remoteNode}`, 'a\'s address is remote-node');
  t.equal((await b.client.nodeIds()).length, 2);

  // what kill -9 leaves: the lease is neither revoked nor renewed (the client is cut off)
  const kv = a.h.get(KVStoreToken);
  const lease = await kv.session();
  lease.release();
  kv.etcd.close();
  const cut = Date.now();
  await until('b to drop a\'s pod after the TTL', async () => !(await hasIP(b, '10.164.3.10/32')), 15_000);
  await until('b to drop a\'s node', async () => (await b.client.clusterNodes())['nodes-added']?.length === 1, 15_000);
  const after = Date.now() - cut;
  t.ok(after >= 2000, `not before the TTL (${after} ms)`);
  t.notOk(await hasIP(b, '10.163.1.1/32'), 'the node address is gone from the ipcache');
  t.notOk((await ipcache()).has('10.164.3.10/32'), 'the pod is gone from b\'s datapath ipcache');
  t.notOk((await ipcache()).has('10.163.1.1/32'), 'the node is gone from b\'s datapath ipcache');
  t.equal(await etcd.client.get(`${KEYS.ip}10.164.3.10`).string(), null, 'the record expired in etcd');
});
