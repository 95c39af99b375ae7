// NodePort services through socket load balancing (issue 14). Privileged, the whole agent as a
// process (BPF datapath) with --cgroup-root at a cgroup of this test's own (only its client
// process is moved into it). The node gets addresses of the test's own on a veth pair made
// before the agent starts (so the agent writes them to the ipcache as the host identity). A
// NodePort service imported from a manifest (TCP and UDP ports, IPv4 and IPv6, backends in pods and
// on ::1): a client in the cgroup reaches the backends at nodeIP:nodePort (and 127.0.0.1:nodePort)
// and sees nodeIP:nodePort as its peer and as the UDP reply's source; the same port on an address
// that is not the node's is not translated (a prohibit route answers it), nor is the node port for
// a process outside the cgroup (nothing listens there: refused), nor another port of the node
// address (a server the test runs there answers it directly). The service list and the kernel
// maps show the frontends on 0.0.0.0 and ::.
import t from 'tap';
import { mkdirSync, rmdirSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { BpfMap, cgroupV2Mount } from '../../src/bpf/index.js';
import { REVERSE_SK_MAP_NAMES, reverseSkEntries } from '../../src/maps/lb/index.js';
import { ip, uniq } from '../bpf/fixtures/topology.js';
import { Cleanup, agentProcess, agentProcessSkip, allocatePod, cli, endpointRequest, until, type Pod } from '../root-datapath-agent/fixtures.js';
import { cgroupClients, listen, loopbackEchoes, tcpEchoes } from '../loadbalancer/sock-fixtures.js';

const POOL = '10.186.0.0/24';
const NODE_IP = '10.186.50.1';
const NODE_IP6 = 'fd00:186:50::1';
const OTHER = '10.186.97.0/24'; // not the node's: prohibit-routed
const OTHER_IP = '10.186.97.2';
const OTHER6 = 'fd00:186:97::/64';
const OTHER_IP6 = 'fd00:186:97::2';
const CLUSTER_IP = '10.186.96.10';
const CLUSTER_IP6 = 'fd00:186:96::10';

const hits = (pod: Pod, id: string): number => pod.traffic.output.split('\n').filter((l) => l === `got ${id}`).length;

function manifest(backends: readonly Pod[], tcp6: number, udp6: number): string {
  return [
    { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: 'np' }, spec: {
      type: 'NodePort', clusterIPs: [CLUSTER_IP, CLUSTER_IP6], ipFamilies: ['IPv4', 'IPv6'],
      ports: [{ name: 'http', port: 80, targetPort: 8080, nodePort: 30080 }, { name: 'dns', port: 53, protocol: 'UDP', targetPort: 5353, nodePort: 30053 }],
    } },
    { apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', metadata: { name: 'web-4', namespace: 'np', labels: { 'kubernetes.io/service-name': 'web' } },
      addressType: 'IPv4', ports: [{ name: 'http', port: 8080 }, { name: 'dns', port: 5353, protocol: 'UDP' }],
      endpoints: backends.map((b) => ({ addresses: [b.ip], conditions: { ready: true } })) },
    { apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', metadata: { name: 'web-6', namespace: 'np', labels: { 'kubernetes.io/service-name': 'web' } },
      addressType: 'IPv6', ports: [{ name: 'http', port: tcp6 }, { name: 'dns', port: udp6, protocol: 'UDP' }],
      endpoints: [{ addresses: ['::1'], conditions: { ready: true } }] },
  ].map((o) => JSON.stringify(o)).join('\n---\n');
}

t.test('host processes in the cgroup reach NodePort services at the node\'s addresses', { skip: agentProcessSkip() || (cgroupV2Mount() ? false : 'no cgroup v2 mounted') }, async (t) => {
  const c = new Cleanup(t);
  const cg = join(cgroupV2Mount()!, `cellium-test-nodeport-${uniq()}`);
  mkdirSync(cg);
  c.teardown(() => rmdirSync(cg));
  // the node's test addresses, before the agent starts (it writes the host's addresses to the ipcache)
  const dev = `cnp${uniq().slice(-8)}`;
  ip('link', 'add', dev, 'type', 'veth', 'peer', 'name', `${dev}p`);
  c.teardown(() => ip('link', 'del', dev));
  ip('link', 'set', dev, 'up');
  ip('link', 'set', `${dev}p`, 'up');
  ip('addr', 'add', `${NODE_IP}/32`, 'dev', dev);
  ip('-6', 'addr', 'add', `${NODE_IP6}/128`, 'dev', dev, 'nodad');
  ip('route', 'add', 'prohibit', OTHER);
  c.teardown(() => ip('route', 'del', 'prohibit', OTHER));
  ip('-6', 'route', 'add', 'prohibit', OTHER6);
  c.teardown(() => ip('-6', 'route', 'del', 'prohibit', OTHER6));
  // another port of the node address, served directly
  const direct = createServer((s) => s.pipe(s));
  await new Promise<void>((r) => direct.listen(0, NODE_IP, r));
  c.teardown(() => new Promise<void>((r) => direct.close(() => r())));
  const directPort = (direct.address() as AddressInfo).port;

  const a = agentProcess(c, 'nodeport', POOL, ['--bpf-lb-sock=true', `--cgroup-root=${cg}`]);
  const agent = a.start();
  t.ok(await a.up(agent), 'the agent serves the API', { log: agent.log() });
  t.ok(await until(() => /socket load balancing attached/.test(agent.log()), 10000), 'socket load balancing attached', { log: agent.log() });

  const backends = [await allocatePod(c, a.client, 'np-0'), await allocatePod(c, a.client, 'np-1')];
  for (const b of backends) await a.client.createEndpoint(0, endpointRequest(b, ['k8s:app=np-backend']));
  const tcpIds = await Promise.all(backends.map((b) => listen(b, 'tcpecho', 8080)));
  const udpIds = await Promise.all(backends.map((b) => listen(b, 'udpecho', 5353)));
  const lo6 = await loopbackEchoes(c);
  const file = join(a.dir, 'np.yaml');
  writeFileSync(file, manifest(backends, lo6.tcpPort, lo6.udpPort));
  const imported = await cli(a.socketPath, 'service', 'import', file);
  t.equal(imported.code, 0, `service import: ${imported.err}`);
  t.ok(await until(async () => (await a.client.listServices()).every((s) => s.status?.['cellium-state']?.state === 'done'), 10000), 'every frontend is done in the kernel maps');

  const listed = await cli(a.socketPath, 'service', 'list');
  t.match(listed.out, /^\d+\s+0\.0\.0\.0:30080\/TCP\s+NodePort\s+1 => 10\.186\.0\.\d+:8080\/TCP \(active\)/m, 'service list: 0.0.0.0:30080 NodePort with its backends');
  t.match(listed.out, /^\d+\s+\[::\]:30053\/UDP\s+NodePort\s+1 => \[::1\]:\d+\/UDP \(active\)/m, 'service list: [::]:30053 NodePort');
  const lb = await cli(a.socketPath, 'bpf', 'lb', 'list', '--bpf-root', a.root);
  t.match(lb.out, /^0\.0\.0\.0:30080\/TCP\s+0\.0\.0\.0:0 \(\d+\) \(0\) \[NodePort\]$/m, 'bpf lb list: the IPv4 surrogate, flagged NodePort');
  t.match(lb.out, /^\[::\]:30080\/TCP\s+\[::\]:0 \(\d+\) \(0\) \[NodePort\]$/m, 'bpf lb list: the IPv6 surrogate');
  t.notMatch(lb.out, /0\.0\.0\.0:0\/ANY|\[::\]:0\/ANY/, 'no wildcard entry on the surrogates (the node\'s other ports stay its own)');

  const { inside, outside } = await cgroupClients(t, c, cg);

  const N = 10;
  t.equal(await tcpEchoes(t, inside, NODE_IP, 30080, N), N, `${N} TCP connections to ${NODE_IP}:30080 echoed by a backend, getpeername showing nodeIP:nodePort`);
  await until(() => tcpIds.reduce((s, id, i) => s + hits(backends[i]!, id), 0) >= N, 3000, 50);
  t.equal(tcpIds.reduce((s, id, i) => s + hits(backends[i]!, id), 0), N, 'the backend pods served them');
  t.same(await inside.ask('tcp', '127.0.0.1', '30080'), ['ok', '127.0.0.1:30080'], 'loopback:nodePort is the node\'s too');
  t.same(await inside.ask('udp', NODE_IP, '30053'), ['ok', `${NODE_IP}:30053`], 'UDP sendto nodeIP:nodePort: the echo comes from nodeIP:nodePort (recvmsg)');
  t.same(await inside.ask('udpc', NODE_IP, '30053'), ['ok', `${NODE_IP}:30053`, `${NODE_IP}:30053`], 'connected UDP: getpeername and the echo\'s source are nodeIP:nodePort');
  t.ok(udpIds.some((id, i) => hits(backends[i]!, id) > 0), 'a UDP backend pod answered');

  t.same(await inside.ask('tcp', OTHER_IP, '30080'), ['err', 'EACCES'], 'the node port on an address that is not the node\'s: not translated (the prohibit route answers)');
  t.same(await inside.ask('udp', OTHER_IP, '30053'), ['err', 'EACCES'], 'UDP to it: not translated either');
  t.same(await inside.ask('tcp', NODE_IP, String(directPort)), ['ok', `${NODE_IP}:${directPort}`], 'another port of the node address reaches the server there');
  t.same(await inside.ask('tcp', NODE_IP, '30081'), ['err', 'ECONNREFUSED'], 'a port no service has: the node answers it (refused), no wildcard takes it');
  t.same(await inside.ask('udp', NODE_IP, '30080'), ['err', 'TIMEOUT'], 'the TCP node port over UDP: not translated (nothing answers)');
  t.same(await outside.ask('tcp', NODE_IP, '30080'), ['err', 'ECONNREFUSED'], 'a process outside the cgroup is not translated (nothing listens on the node port)');

  const before6 = lo6.hits();
  t.same(await inside.ask('tcp', NODE_IP6, '30080'), ['ok', `[${NODE_IP6}]:30080`], 'IPv6: TCP to [nodeIP6]:nodePort reaches the backend on ::1, getpeername shows it');
  t.same(await inside.ask('udpc', NODE_IP6, '30053'), ['ok', `[${NODE_IP6}]:30053`, `[${NODE_IP6}]:30053`], 'IPv6: connected UDP');
  t.same(await inside.ask('tcp', '::1', '30080'), ['ok', '[::1]:30080'], 'IPv6: [::1]:nodePort');
  t.equal(lo6.hits() - before6, 3, 'the IPv6 backend served them');
  t.same(await inside.ask('tcp', OTHER_IP6, '30080'), ['err', 'EACCES'], 'IPv6: not the node\'s address: not translated');
  t.same(await inside.ask('tcp', `::ffff:${NODE_IP}`, '30080'), ['ok', `[::ffff:${NODE_IP}]:30080`], 'an IPv6 socket to the IPv4-mapped node address: translated as IPv4');

  const rev = BpfMap.openPinned(join(a.root, REVERSE_SK_MAP_NAMES.reverseSk4));
  try {
    const entries = reverseSkEntries(rev, 4);
    t.ok(entries.some((e) => e.frontend === NODE_IP && e.frontendPort === 30053 && backends.some((b) => b.ip === e.backend) && e.backendPort === 5353), 'cellium_lb4_reverse_sk keeps nodeIP:nodePort (not the surrogate) as the UDP socket\'s frontend');
  } finally {
    rev.close();
  }

  // the node port goes away with its service
  const del = await cli(a.socketPath, 'service', 'delete', '--all');
  t.equal(del.code, 0, `service delete --all: ${del.err}`);
  t.ok(await until(async () => (await inside.ask('tcp', NODE_IP, '30080'))[1] === 'ECONNREFUSED', 10000, 200), 'service deleted: nodeIP:nodePort is refused (untranslated)');
});
