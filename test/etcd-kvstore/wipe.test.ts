// etcd wiped under two agents (stopped, its data directory removed, started empty): each agent
// notices the store was replaced, puts its own keys again and lists every mirror again, so a pod
// deleted and one added (with a new identity) on one node after the wipe are seen by the other
// within seconds (measured), and no stale entry of the old store stays in its ipcache.
import t from 'tap';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { KEYS } from '../../src/cells/kvstore/index.js';
import type { TestLike } from '../../src/hive/index.js';
import { podRequest, startAgent, type TestAgent } from '../api-integration/agent.js';
import { etcdSkip, startEtcd, type TestEtcd } from '../kvstore/etcd.js';
import { until as pollUntil, type Poll } from '../until.js';

const until = <T>(what: string, fn: Poll<T>, ms = 30_000): Promise<T> => pollUntil(what, fn, ms, 50);

function node(t: TestLike, etcd: TestEtcd, name: string, ip: string, range: string): Promise<TestAgent> {
  return startAgent(t, { kvstore: 'etcd', 'kvstore-opt': `etcd.config=${etcd.configFile()}`, 'node-name': name, 'node-ip': ip, 'ipv4-range': range, 'ipv6-range': '' });
}

async function ips(a: TestAgent): Promise<Map<string, number>> {
  return new Map((await a.client.ipList()).map((e) => [e.cidr!, e.identity!]));
}

t.test('etcd wiped under two agents: they converge within seconds', { skip: etcdSkip() }, async (t) => {
  const etcd = await startEtcd(t);
  const a = await node(t, etcd, 'node-a', '10.181.0.1', '10.182.1.0/24');
  const b = await node(t, etcd, 'node-b', '10.181.0.2', '10.182.2.0/24');
  await a.client.createEndpoint(1, podRequest(1, { ipv4: '10.182.1.10' }, { labels: ['k8s:app=old'] }));
  const oldId = (await a.client.getEndpoint(1)).status?.identity?.id;
  await until('b to see a\'s pod', async () => (await ips(b)).get('10.182.1.10/32') === oldId);
  // the watched prefixes move on for a while (a record and an identity of a third node come and go),
  // so the revisions the watches resume from are above what the new store reaches
  const rec = JSON.stringify({ IP: '10.182.9.9', Mask: null, HostIP: '10.181.0.9', ID: 60000, Key: 0, Metadata: 'cellium:default:node-z:9', K8sNamespace: 'default', K8sPodName: 'z' });
  for (let i = 0; i < 40; i++) {
    await etcd.client.put(`${KEYS.ip}10.182.9.9`).value(rec);
    await etcd.client.delete().key(`${KEYS.ip}10.182.9.9`);
    await etcd.client.put(`${KEYS.identitiesId}60000`).value('k8s:app=z;');
    await etcd.client.delete().key(`${KEYS.identitiesId}60000`);
  }
  await until('b to see the last of them', async () => !(await ips(b)).has('10.182.9.9/32') && !(await b.client.listIdentities()).some((i) => i.id === 60000));

  await etcd.stop();
  rmSync(join(etcd.dataDir, 'data'), { recursive: true, force: true });
  await etcd.start();
  const back = Date.now();

  // each agent puts its own keys again
  await until('a and b to register again', async () => (await etcd.client.get(`${KEYS.nodes}default/node-a`).string()) && (await etcd.client.get(`${KEYS.nodes}default/node-b`).string()));
  const republished = Date.now() - back;
  t.ok(await etcd.client.get(`${KEYS.ip}10.182.1.10`).string(), 'a\'s pod is published again');

  // after the wipe: a deletes its old pod and adds one with new labels (a new identity)
  await a.client.deleteEndpoint('1');
  const created = await until('a to create a pod with new labels', () => a.client.createEndpoint(2, podRequest(2, { ipv4: '10.182.1.20' }, { labels: ['k8s:app=new'] })).catch(() => undefined), 20_000);
  const newId = created.status?.identity?.id;
  t.ok(newId, 'the new pod has an identity');
  const changed = Date.now();
  await until('b to see the new pod and identity, and not the deleted one', async () => {
    const m = await ips(b);
    return m.get('10.182.1.20/32') === newId && !m.has('10.182.1.10/32') && (await b.client.listIdentities()).some((i) => i.id === newId);
  });
  const converged = Date.now() - changed;
  t.comment(`keys put again ${republished} ms after etcd came back; b converged ${converged} ms after a's change`);
  t.ok(converged < 10_000, `b converged within seconds (${converged} ms)`);

  // every mirror listed again (under load a mirror may still be starting when the state is Ok)
  const st = await until('b\'s kvstore status Ok with its mirrors listed again', async () => {
    const s = (await b.client.status()).kvstore;
    return s?.state === 'Ok' && /ip\/v1\/default rev \d+ \(/.test(s.msg ?? '') && !/starting/.test(s.msg ?? '') && s;
  });
  t.match(st.msg, /mirrors: .*ip\/v1\/default rev \d+ \(\d+ keys, verified \d+s ago\).*; store rev \d+/, 'the status line shows each mirror\'s revision and last check');
});
