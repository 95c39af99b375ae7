// Pod CIDRs from the cluster pool in etcd: two agents claim different subnets (create-only), the
// IPAM hands out addresses from the claim, the node record carries it, a restarted agent gets the
// same CIDR back; without a kvstore the flag is refused naming the fix.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PODCIDR_PREFIX, subnets } from '../../src/cells/cluster/index.js';
import { startAgent, type TestAgent } from '../api-integration/agent.js';
import type { TestLike } from '../../src/hive/index.js';
import { etcdSkip, startEtcd, type TestEtcd } from './etcd.js';

function node(t: TestLike, etcd: TestEtcd, name: string, ip: string, stateDir: string): Promise<TestAgent> {
  return startAgent(t, {
    kvstore: 'etcd', 'kvstore-opt': `etcd.config=${etcd.configFile()}`, 'node-name': name, 'node-ip': ip, 'ipv6-range': '',
    'cluster-pool-ipv4-cidr': '10.166.0.0/16', 'cluster-pool-ipv4-mask-size': 24, 'state-dir': stateDir,
  });
}

t.test('subnets of a pool, in order', async (t) => {
  t.same([...subnets('10.166.0.0/22', 24)], ['10.166.0.0/24', '10.166.1.0/24', '10.166.2.0/24', '10.166.3.0/24']);
  t.throws(() => [...subnets('10.166.0.0/24', 16)], /mask-size=16 is shorter than the pool's \/24/);
});

t.test('without a kvstore --cluster-pool-ipv4-cidr is refused', async (t) => {
  await t.rejects(startAgent(t, { 'cluster-pool-ipv4-cidr': '10.166.0.0/16' }), /--cluster-pool-ipv4-cidr needs a kvstore.*--kvstore=etcd/);
  await t.rejects(startAgent(t, { 'cluster-pool-ipv4-cidr': '10.166.0.0' }), /give an IPv4 CIDR such as 10.0.0.0\/8/);
});

t.test('two agents claim different pod CIDRs; a restart keeps its CIDR', { skip: etcdSkip() }, async (t) => {
  const etcd = await startEtcd(t);
  const dirs = [0, 1].map(() => mkdtempSync(join(tmpdir(), 'cellium-podcidr-')));
  t.teardown(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
  const a = await node(t, etcd, 'node-a', '10.165.0.1', dirs[0]!);
  const b = await node(t, etcd, 'node-b', '10.165.0.2', dirs[1]!);
  const poolOf = async (x: TestAgent) => (await x.client.ipam({ family: 'ipv4' })).pools?.find((p) => p.family === 'ipv4')?.cidr;
  const [ca, cb] = [await poolOf(a), await poolOf(b)];
  t.ok(ca && cb && ca !== cb, `distinct CIDRs: ${ca}, ${cb}`);
  t.match(ca, /^10\.166\.\d+\.0\/24$/);
  const claims = await etcd.client.getAll().prefix(`${PODCIDR_PREFIX}default/`).strings();
  t.same(claims, { [`${PODCIDR_PREFIX}default/${ca!.replace('/', '_')}`]: 'node-a', [`${PODCIDR_PREFIX}default/${cb!.replace('/', '_')}`]: 'node-b' });
  const lease = (await etcd.client.get(`${PODCIDR_PREFIX}default/${ca!.replace('/', '_')}`).exec()).kvs[0]!.lease;
  t.not(String(lease), '0', 'the claim is leased');
  const alloc = await a.client.ipamAllocate({ family: 'ipv4', owner: 'default/p1' });
  t.match(alloc.address?.ipv4, new RegExp(`^${ca!.split('.').slice(0, 3).join('\\.')}\\.`), 'addresses come from the claim');
  t.same((await a.client.clusterNodes())['nodes-added']?.find((n) => n.name === 'default/node-a')?.['primary-address']?.ipv4?.['alloc-range'], ca);

  // restart a: a clean stop releases the claim (the lease is revoked); the state dir brings it back
  await a.h.hive.stop();
  t.equal(await etcd.client.get(`${PODCIDR_PREFIX}default/${ca!.replace('/', '_')}`).string(), null, 'released at stop');
  const a2 = await node(t, etcd, 'node-a', '10.165.0.1', dirs[0]!);
  t.equal(await poolOf(a2), ca, 'the restarted agent has its CIDR back');
});

t.test('a full cluster pool refuses the next node naming the fix', { skip: etcdSkip() }, async (t) => {
  const etcd = await startEtcd(t);
  const start = (name: string) => startAgent(t, {
    kvstore: 'etcd', 'kvstore-opt': `etcd.config=${etcd.configFile()}`, 'node-name': name, 'ipv6-range': '',
    'cluster-pool-ipv4-cidr': '10.166.254.0/24', 'cluster-pool-ipv4-mask-size': 25,
  });
  await start('node-a');
  await start('node-b');
  await t.rejects(start('node-c'), /the cluster pool 10\.166\.254\.0\/24 has no free \/25 left: use a larger --cluster-pool-ipv4-cidr/);
});

t.test('after a new session lease the node claims the same CIDR again, or says clearly that another node took it', { skip: etcdSkip() }, async (t) => {
  const { Subject } = await import('rxjs');
  const { PodCIDRClaimer } = await import('../../src/cells/cluster/index.js');
  const { pino } = await import('pino');
  const etcd = await startEtcd(t);
  const dir = mkdtempSync(join(tmpdir(), 'cellium-podcidr-renew-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const renewed = new Subject<void>();
  // the lease and the claimer are released in the body, not in teardowns: tap runs teardowns in
  // the order they were added, so etcd would be stopped first and the lease's keep-alive would
  // hold the process open until tap's timeout
  const lease = etcd.client.lease(30);
  const kv = { enabled: true, config: { clusterName: 'default', nodeName: 'node-a' }, etcd: etcd.client, session: async () => lease, sessionRenewed$: renewed.asObservable() };
  const logged: string[] = [];
  const log = pino({ level: 'info' }, { write: (line: string) => void logged.push(line) });
  const claimer = new PodCIDRClaimer(kv as never, '10.166.128.0/20', 24, join(dir, 'pod-cidr.json'), log);
  renewed.subscribe(() => claimer.onSessionRenewed()); // the cluster cell's observer job
  try {
    const cidr = await claimer.claim();
    const key = `${PODCIDR_PREFIX}default/${cidr.replace('/', '_')}`;
    t.equal(await etcd.client.get(key).string(), 'node-a');

    await etcd.client.delete().key(key); // the claim expired with the old lease
    renewed.next();
    await until(async () => (await etcd.client.get(key).string()) === 'node-a');
    t.pass('claimed again');

    await etcd.client.put(key).value('node-z'); // another node took it meanwhile
    renewed.next();
    await until(async () => logged.some((l) => l.includes(`pod CIDR ${cidr} was claimed by node-z`)));
    t.equal(await etcd.client.get(key).string(), 'node-z', 'the other node keeps it');
    t.equal(claimer.current(), cidr, 'this node goes on with its pool');
  } finally {
    claimer.stop();
    await lease.revoke().catch(() => undefined);
  }
});

async function until(fn: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await fn())) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}
