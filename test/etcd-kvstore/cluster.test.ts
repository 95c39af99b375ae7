// Two whole agents (every cell, memory datapath) on one real etcd: nodes registered and listed,
// endpoints published into the other node's ipcache with the same identities, policy by identity
// allowing and denying a peer on the other node, a remote node's address as remote-node (6),
// entries removed when the endpoint is deleted; the API answers match Cilium's models, and the
// CLI's node list, ip list and kvstore get show the same.
import t from 'tap';
import { runCli } from '../../src/cli/main.js';
import { DatapathToken, ReservedIdentity } from '../../src/datapath/types.js';
import { PolicyRepositoryToken } from '../../src/cells/policy/index.js';
import { KEYS } from '../../src/cells/kvstore/index.js';
import type { TestLike } from '../../src/hive/index.js';
import { podRequest, startAgent, type TestAgent } from '../api-integration/agent.js';
import { etcdSkip, startEtcd, type TestEtcd } from '../kvstore/etcd.js';
import { until as pollUntil, type Poll } from '../until.js';

interface IPEntry { cidr: string; identity: number; hostIP?: string; metadata?: { source?: string; namespace?: string; name?: string } }

const until = <T>(what: string, fn: Poll<T>, ms = 15_000): Promise<T> => pollUntil(what, fn, ms, 25);

function node(t: TestLike, etcd: TestEtcd, name: string, ip: string, range: string): Promise<TestAgent> {
  return startAgent(t, { kvstore: 'etcd', 'kvstore-opt': `etcd.config=${etcd.configFile()}`, 'node-name': name, 'node-ip': ip, 'ipv4-range': range, 'ipv6-range': '' });
}

async function ipList(a: TestAgent): Promise<IPEntry[]> {
  const res = await a.call('GetIP', 'GET', '/ip');
  if (res.problems.length) throw new Error(`GET /ip does not match the spec: ${JSON.stringify(res.problems)}`);
  return res.body as IPEntry[];
}

async function cli(args: string[], env: Record<string, string> = {}): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(args, { stdout: (s) => out.push(s), stderr: (s) => err.push(s), readFile: async () => '', env });
  return { code, out: out.join(''), err: err.join('') };
}

const POLICY = JSON.stringify([{
  endpointSelector: { matchLabels: { app: 'server' } },
  ingress: [{ fromEndpoints: [{ matchLabels: { app: 'client' } }], toPorts: [{ ports: [{ port: '80', protocol: 'TCP' }] }] }],
}]);

t.test('two agents on one etcd: nodes, the ipcache across nodes, policy by identity for remote peers', { skip: etcdSkip() }, async (t) => {
  const etcd = await startEtcd(t);
  const a = await node(t, etcd, 'node-a', '10.161.0.1', '10.162.1.0/24');
  const b = await node(t, etcd, 'node-b', '10.161.0.2', '10.162.2.0/24');

  // nodes: each knows both, in Cilium's ClusterNodeStatus
  const nodes = await until('a to know b', async () => {
    const res = await a.call('GetClusterNodes', 'GET', '/cluster/nodes');
    const body = res.body as { self: string; 'nodes-added': { name: string; source: string; 'primary-address': { ipv4: { ip: string; 'alloc-range'?: string } } }[] };
    t.same(res.problems, [], 'GET /cluster/nodes matches the spec');
    return body['nodes-added'].length === 2 && body;
  });
  t.equal(nodes.self, 'default/node-a');
  t.same(nodes['nodes-added'].map((n) => [n.name, n.source, n['primary-address'].ipv4.ip, n['primary-address'].ipv4['alloc-range']]), [
    ['default/node-a', 'local', '10.161.0.1', '10.162.1.0/24'],
    ['default/node-b', 'kvstore', '10.161.0.2', '10.162.2.0/24'],
  ]);
  const ids = await a.call('GetNodeIds', 'GET', '/node/ids');
  t.same(ids.problems, []);
  t.same(ids.body, [{ id: 1, ips: ['10.161.0.1'] }, { id: 2, ips: ['10.161.0.2'] }]);
  const raw = JSON.parse((await etcd.client.get(`${KEYS.nodes}default/node-b`).string())!);
  t.match(raw, { Name: 'node-b', Cluster: 'default', IPAddresses: [{ Type: 'InternalIP', IP: '10.161.0.2' }], IPv4AllocCIDR: { IP: '10.162.2.0', Mask: '////AA==' } }, 'Cilium\'s node JSON');

  // a remote node's address is remote-node in the ipcache
  await until('b to map a\'s address to remote-node', async () => (await ipList(b)).find((e) => e.cidr === '10.161.0.1/32' && e.identity === ReservedIdentity.remoteNode));

  // policy on b: the server accepts app=client on port 80
  b.h.get(PolicyRepositoryToken).import(POLICY);
  await b.client.createEndpoint(1, podRequest(1, { ipv4: '10.162.2.10' }, { labels: ['k8s:app=server'] }));
  await a.client.createEndpoint(2, podRequest(2, { ipv4: '10.162.1.20' }, { labels: ['k8s:app=client'], 'k8s-pod-name': 'client-2' }));
  await a.client.createEndpoint(3, podRequest(3, { ipv4: '10.162.1.30' }, { labels: ['k8s:app=other'] }));
  const clientId = (await a.client.getEndpoint('2')).status?.identity?.id;
  const otherId = (await a.client.getEndpoint('3')).status?.identity?.id;
  t.ok(clientId && otherId && clientId !== otherId);

  const seen = await until('b to see a\'s endpoints', async () => {
    const l = await ipList(b);
    const c = l.find((e) => e.cidr === '10.162.1.20/32');
    return c && l.find((e) => e.cidr === '10.162.1.30/32') && c;
  });
  t.same(seen, { cidr: '10.162.1.20/32', identity: clientId, hostIP: '10.161.0.1', metadata: { source: 'kvstore', namespace: 'default', name: 'client-2' } });
  t.same(JSON.parse((await etcd.client.get(`${KEYS.ip}10.162.1.20`).string())!), {
    IP: '10.162.1.20', Mask: null, HostIP: '10.161.0.1', ID: clientId, Key: 0, Metadata: 'cellium:default:node-a:2', K8sNamespace: 'default', K8sPodName: 'client-2',
  }, 'Cilium\'s IPIdentityPair JSON');
  const lease = (await etcd.client.get(`${KEYS.ip}10.162.1.20`).exec()).kvs[0].lease;
  t.not(String(lease), '0', 'the ipcache record is leased');

  // b's datapath: a's client may reach the server on 80, a's other pod may not
  const dp = b.h.get(DatapathToken);
  const pkt = (src: string, dport: number) => ({ src, dst: '10.162.2.10', protocol: 6, dport });
  await until('the server to allow the remote client', async () => (await dp.verdict(1, 'ingress', pkt('10.162.1.20', 80))).allowed);
  t.same(await dp.verdict(1, 'ingress', pkt('10.162.1.20', 80)), { allowed: true, peerIdentity: clientId });
  t.same(await dp.verdict(1, 'ingress', pkt('10.162.1.20', 81)), { allowed: false, reason: 'policy', peerIdentity: clientId });
  t.same(await dp.verdict(1, 'ingress', pkt('10.162.1.30', 80)), { allowed: false, reason: 'policy', peerIdentity: otherId });

  // same labels on b: same identity
  await b.client.createEndpoint(4, podRequest(4, { ipv4: '10.162.2.40' }, { labels: ['k8s:app=client'] }));
  t.equal((await b.client.getEndpoint('4')).status?.identity?.id, clientId, 'the same labels have the same identity on both nodes');

  // the CLI
  const nl = await cli(['--socket-path', a.socketPath, 'node', 'list']);
  t.equal(nl.code, 0, nl.err);
  t.match(nl.out, /default\/node-a \(self\)\s+10\.161\.0\.1\s+10\.162\.1\.0\/24\s+local/);
  t.match(nl.out, /default\/node-b\s+10\.161\.0\.2\s+10\.162\.2\.0\/24\s+kvstore/);
  const il = await cli(['--socket-path', b.socketPath, 'ip', 'list', '--cidr', '10.162.1.0/24']);
  t.equal(il.code, 0, il.err);
  t.match(il.out, new RegExp(`10\\.162\\.1\\.20/32\\s+${clientId}\\s+10\\.161\\.0\\.1\\s+kvstore\\s+default/client-2`));
  t.notMatch(il.out, /10\.162\.2\.10/, 'filtered by --cidr');
  const kg = await cli(['kvstore', 'get', '--recursive', `${KEYS.nodes}default/`, '--kvstore-opt', `etcd.config=${etcd.configFile()}`]);
  t.equal(kg.code, 0, kg.err);
  t.match(kg.out, /cilium\/state\/nodes\/v1\/default\/node-a => \{"Name":"node-a"/);
  t.match(kg.out, /cilium\/state\/nodes\/v1\/default\/node-b => \{"Name":"node-b"/);
  const one = await cli(['kvstore', 'get', `${KEYS.ip}10.162.1.20`], { CELLIUM_KVSTORE_OPT: `etcd.config=${etcd.configFile()}` });
  t.equal(one.code, 0, one.err);
  t.match(one.out, /"K8sPodName":"client-2"/);
  const none = await cli(['kvstore', 'get', 'cilium/nothing', '--kvstore-opt', `etcd.config=${etcd.configFile()}`]);
  t.equal(none.code, 1);
  t.match(none.err, /no key cilium\/nothing/);
  const noCfg = await cli(['kvstore', 'get', 'x']);
  t.equal(noCfg.code, 2);
  t.match(noCfg.err, /--kvstore-opt etcd.config=FILE/);

  // deleting the pod on a removes its entry on b, from the API and the datapath
  await a.client.deleteEndpoint('2');
  await until('b to drop the deleted pod', async () => !(await ipList(b)).some((e) => e.cidr === '10.162.1.20/32'));
  t.equal(await etcd.client.get(`${KEYS.ip}10.162.1.20`).string(), null);
  t.equal((await dp.verdict(1, 'ingress', pkt('10.162.1.20', 80))).peerIdentity, ReservedIdentity.world, 'the address is world again on b');
});
