// A label set with two identities in etcd (what an older agent left after claims were lost with a
// lease during an outage): at start the agent keeps the lowest, deletes the other, writes the label
// set's own key, and logs what it did truthfully; allocation then gives the kept number, and a second
// agent allocating the same labels concurrently gets the same one.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { invoke, testHive, type TestLike } from '../../src/hive/index.js';
import { statedirCell } from '../../src/cells/statedir/index.js';
import { identityCell, IdentityAllocatorToken, parseLabels, type IdentityAllocator } from '../../src/cells/identity/index.js';
import { kvstoreCell, KEYS } from '../../src/cells/kvstore/index.js';
import { etcdSkip, startEtcd, type TestEtcd } from '../kvstore/etcd.js';

const use = invoke('use-identity', (_a: IdentityAllocator) => undefined, IdentityAllocatorToken);

async function agent(t: TestLike, etcd: TestEtcd, node: string, logged: string[] = []): Promise<IdentityAllocator> {
  const dir = mkdtempSync(join(tmpdir(), 'cellium-kv-split-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const logger = pino({ level: 'info' }, { write: (line: string) => void logged.push(line) });
  const h = await testHive(t, [statedirCell, kvstoreCell, identityCell, use], {
    logger,
    config: { 'state-dir': dir, kvstore: 'etcd', 'kvstore-opt': `etcd.config=${etcd.configFile()}`, 'node-name': node },
  });
  return h.get(IdentityAllocatorToken);
}

t.test('two identities for one label set in etcd: repaired at start, logged truthfully', { skip: etcdSkip() }, async (t) => {
  const etcd = await startEtcd(t);
  const list = 'k8s:app=split;k8s:io.kubernetes.pod.namespace=default;';
  await etcd.client.put(`${KEYS.identitiesId}11723`).value(list);
  await etcd.client.put(`${KEYS.identitiesId}49810`).value(list);
  await etcd.client.put(`${KEYS.identitiesValue}${list}/node-old`).value('49810');
  const logged: string[] = [];
  const a = await agent(t, etcd, 'node-a', logged);

  t.equal(await etcd.client.get(`${KEYS.identitiesId}11723`).string(), list, 'the lowest is kept');
  t.equal(await etcd.client.get(`${KEYS.identitiesId}49810`).string(), null, 'the other is removed');
  t.equal(await etcd.client.get(`${KEYS.identitiesLabels}${list}`).string(), '11723', 'the label set\'s own key names the kept one');
  const line = logged.map((l) => JSON.parse(l) as { msg: string; kept?: number; removed?: number; claimedBy?: string[] }).find((l) => /two identities/.test(l.msg));
  t.ok(line, 'the repair is logged');
  t.match(line, { kept: 11723, removed: 49810, claimedBy: ['node-old'], msg: /had two identities in the kvstore \(11723 and 49810\): kept 11723, removed 49810/ });
  t.notOk(logged.some((l) => /belongs to other labels/.test(l)), 'nothing claims the number belongs to other labels');

  const b = await agent(t, etcd, 'node-b');
  const labels = parseLabels(['k8s:app=split', 'k8s:io.kubernetes.pod.namespace=default']);
  const [ia, ib] = await Promise.all([a.allocate(labels), b.allocate(labels)]);
  t.equal(ia.identity.id, 11723, 'allocation gives the kept number');
  t.equal(ib.identity.id, 11723, 'on the other agent too');
  t.equal(a.lookup(49810), undefined, 'the removed number is not known');
  const ids = await etcd.client.getAll().prefix(KEYS.identitiesId).strings();
  t.same(Object.values(ids).filter((v) => v === list).length, 1, 'one identity for the label set in etcd');
});
