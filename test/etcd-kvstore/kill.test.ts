// kill -9 of an agent process (memory datapath) with a short lease TTL: the other node drops its
// ipcache entries and its node after the TTL; restarted on the same state directory, it gets the
// same pod CIDR back and its endpoint is restored and published again.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { podRequest } from '../api-integration/agent.js';
import type { TestLike } from '../../src/hive/index.js';
import { etcdSkip, startEtcd, type TestEtcd } from '../kvstore/etcd.js';
import { agentBuilt, startAgentProc, until, type AgentProc } from './agent-process.js';

const built = agentBuilt;



function agent(t: TestLike, etcd: TestEtcd, dir: string, name: string, ip: string): Promise<AgentProc> {
  return startAgentProc(t, etcd, dir, { name, ip, leaseTtl: '4s', ipam: ['--cluster-pool-ipv4-cidr=10.173.0.0/16', '--cluster-pool-ipv4-mask-size=24'], timeoutMs: 3000 });
}

t.test('kill -9 of an agent: its entries go from the other node after the TTL; a restart restores CIDR and endpoint', {
  skip: !built ? 'dist/ not built: run npm run build' : etcdSkip(),
}, async (t) => {
  const etcd = await startEtcd(t);
  const dirs = [0, 1].map(() => mkdtempSync(join(tmpdir(), 'cellium-kill-')));
  t.teardown(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
  const a = await agent(t, etcd, dirs[0]!, 'node-a', '10.174.0.1');
  const b = await agent(t, etcd, dirs[1]!, 'node-b', '10.174.0.2');
  const poolA = (await a.client.ipam({ family: 'ipv4' })).pools?.find((p) => p.family === 'ipv4')?.cidr;
  t.match(poolA, /^10\.173\.\d+\.0\/24$/);
  const podIP = poolA!.replace(/0\/24$/, '10');
  await a.client.createEndpoint(1, podRequest(1, { ipv4: podIP }, { labels: ['k8s:app=web'] }));
  const has = async (ip: string) => (await b.client.ipList()).some((e) => e.cidr === `${ip}/32`);
  await until('b to see a\'s pod', () => has(podIP));

  a.proc.kill('SIGKILL');
  const killed = Date.now();
  await until('b to drop a\'s pod and node', async () => !(await has(podIP)) && !(await has('10.174.0.1')) && (await b.client.clusterNodes())['nodes-added']?.length === 1);
  // the lease is renewed every third of the TTL, so it runs out between 2/3 of the TTL and the TTL after the kill
  t.ok(Date.now() - killed >= 2000, `when the lease ran out, not at once (${Date.now() - killed} ms)`);

  const a2 = await agent(t, etcd, dirs[0]!, 'node-a', '10.174.0.1');
  t.equal((await a2.client.ipam({ family: 'ipv4' })).pools?.find((p) => p.family === 'ipv4')?.cidr, poolA, 'the same pod CIDR');
  const ep = await until('the endpoint restored', async () => {
    const e = await a2.client.getEndpoint(1);
    return e.status?.state === 'ready' && e;
  });
  t.equal(ep.status?.networking?.addressing?.[0]?.ipv4, podIP, 'with its address');
  await until('b to see the restored pod again', () => has(podIP));
  t.pass('published again');
});
