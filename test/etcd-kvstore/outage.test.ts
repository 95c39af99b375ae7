// An etcd outage longer than the lease under two agent processes: new label sets requested on both
// at once fail within the allocation time limit with a clear error and leave nothing in etcd when it
// comes back; once it is back the same labels get one identity on both; and SIGTERM with etcd down
// (an allocation in flight) stops each agent within 5 s (measured), allocating nothing afterwards.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KEYS } from '../../src/cells/kvstore/index.js';
import { podRequest } from '../api-integration/agent.js';
import type { TestLike } from '../../src/hive/index.js';
import { etcdSkip, startEtcd, type TestEtcd } from '../kvstore/etcd.js';
import { agentBuilt, startAgentProc, until, type AgentProc } from './agent-process.js';

const built = agentBuilt;


const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));


function agent(t: TestLike, etcd: TestEtcd, name: string, ip: string, range: string): Promise<AgentProc> {
  const dir = mkdtempSync(join(tmpdir(), 'cellium-outage-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return startAgentProc(t, etcd, dir, { name, ip, leaseTtl: '2s', ipam: [`--ipv4-range=${range}`], timeoutMs: 60_000 });
}

/** The outcome of a request, bounded (so a request that hangs is a failed test, not a hung one). */
async function outcome<T>(p: Promise<T>, ms: number): Promise<{ ok: boolean; err?: string; ms: number }> {
  const began = Date.now();
  const r = await Promise.race([p.then(() => ({ ok: true }), (err: Error) => ({ ok: false, err: err.message })), sleep(ms).then(() => ({ ok: false, err: `no answer within ${ms} ms` }))]);
  return { ...r, ms: Date.now() - began };
}

async function idsOf(etcd: TestEtcd, list: string): Promise<string[]> {
  const ids = await etcd.client.getAll().prefix(KEYS.identitiesId).strings();
  return Object.entries(ids).filter(([, v]) => v === list).map(([k]) => k.slice(KEYS.identitiesId.length));
}

async function exitTime(p: AgentProc): Promise<number> {
  const began = Date.now();
  const exited = new Promise<void>((r) => (p.proc.exitCode !== null || p.proc.signalCode !== null ? r() : p.proc.once('exit', () => r())));
  p.proc.kill('SIGTERM');
  await Promise.race([exited, sleep(30_000)]);
  return Date.now() - began;
}

t.test('an etcd outage longer than the lease: bounded allocation, one identity per label set, bounded stop', {
  skip: !built ? 'dist/ not built: run npm run build' : etcdSkip(),
}, async (t) => {
  const etcd = await startEtcd(t);
  const a = await agent(t, etcd, 'node-a', '10.184.0.1', '10.185.1.0/24');
  const b = await agent(t, etcd, 'node-b', '10.184.0.2', '10.185.2.0/24');
  const dup = 'k8s:app=dup;k8s:io.kubernetes.pod.namespace=default;';

  await etcd.stop();
  await sleep(5000); // past twice the 2 s lease: the agents know their leases are gone
  const [ra, rb] = await Promise.all([
    outcome(a.client.createEndpoint(1, podRequest(1, { ipv4: '10.185.1.10' }, { labels: ['k8s:app=dup'] })), 30_000),
    outcome(b.client.createEndpoint(1, podRequest(1, { ipv4: '10.185.2.10' }, { labels: ['k8s:app=dup'] })), 30_000),
  ]);
  for (const [n, r] of [['a', ra], ['b', rb]] as const) {
    t.notOk(r.ok, `${n}: no new identity while etcd is down`);
    t.match(r.err, /no identity for labels "k8s:app=dup;.*" within 10000 ms \(--identity-allocation-timeout\): the kvstore did not answer.*nothing was allocated/, `${n}: a clear error`);
    t.ok(r.ms < 15_000, `${n}: failed within the time limit (${r.ms} ms)`);
  }

  await etcd.start();
  await until('both agents to register again', async () => !!(await etcd.client.get(`${KEYS.nodes}default/node-a`).string()) && !!(await etcd.client.get(`${KEYS.nodes}default/node-b`).string()));
  await sleep(3000); // anything a failed request left in flight would have landed by now
  t.same(await idsOf(etcd, dup), [], 'the failed requests allocated nothing later');
  t.same(Object.keys(await etcd.client.getAll().prefix(`${KEYS.identitiesValue}${dup}`).strings()), [], 'and claimed nothing');

  // back: both at once get one identity
  const [ea, eb] = await Promise.all([
    until('a to create the pod', () => a.client.createEndpoint(1, podRequest(1, { ipv4: '10.185.1.10' }, { labels: ['k8s:app=dup'] }))),
    until('b to create the pod', () => b.client.createEndpoint(1, podRequest(1, { ipv4: '10.185.2.10' }, { labels: ['k8s:app=dup'] }))),
  ]);
  t.equal(ea.status?.identity?.id, eb.status?.identity?.id, 'the same identity on both agents');
  t.same(await idsOf(etcd, dup), [String(ea.status?.identity?.id)], 'one identity for the label set in etcd');

  // SIGTERM with etcd down and an allocation in flight on a
  await etcd.stop();
  await sleep(500);
  const late = a.client.createEndpoint(2, podRequest(2, { ipv4: '10.185.1.20' }, { labels: ['k8s:app=late'] })).catch((err: Error) => err);
  await sleep(300);
  const [sa, sb] = await Promise.all([exitTime(a), exitTime(b)]);
  t.comment(`stop with etcd down: a ${sa} ms, b ${sb} ms`);
  t.ok(sa <= 5000, `a stopped within 5 s (${sa} ms)`);
  t.ok(sb <= 5000, `b stopped within 5 s (${sb} ms)`);
  t.match(a.log(), /signal received, stopping/);
  t.ok((await late) instanceof Error, 'the request in flight did not succeed');
  await etcd.start();
  await sleep(2000);
  t.same(await idsOf(etcd, 'k8s:app=late;k8s:io.kubernetes.pod.namespace=default;'), [], 'the allocation in flight at the stop was not completed later');
});
