// A frontend that becomes one of the node's addresses stops taking the node's connections (issue
// 22, point 1), through socket load balancing. Privileged: the whole agent as a process (BPF
// datapath) with --cgroup-root at a cgroup of the test's own, whose only process is the test's
// client. A ClusterIP (backend: an echo server of the test on 127.0.0.1) is reached by the client
// while the address is no node's; once the test puts the address on a veth of its own and a
// server of the node listens there, the frontend is disabled and the client's connect reaches the
// node's own server (the service no longer takes it), and a PUT of a frontend on that address is a
// 460; once the address is removed the service takes its connects again. An address added while
// the agent is down: the next start restores the service disabled and takes it out of the maps.
import t from 'tap';
import { mkdirSync, rmdirSync } from 'node:fs';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { join } from 'node:path';
import { cgroupV2Mount } from '../../src/bpf/index.js';
import { ip, uniq } from '../bpf/fixtures/topology.js';
import { Cleanup, agentProcess, agentProcessSkip, cli, until } from '../root-datapath-agent/fixtures.js';
import { cgroupClients } from '../loadbalancer/sock-fixtures.js';

const POOL = '10.189.0.0/24';
const VIPS = '10.189.96.0/24';
const VIP = '10.189.96.10';

/** A TCP echo server on host:port (0: any free port) counting its connections. */
async function echo(c: Cleanup, host: string, port = 0): Promise<{ server: Server; port: number; hits: () => number }> {
  let n = 0;
  const server = createServer((s) => {
    n++;
    s.on('error', () => undefined);
    s.pipe(s);
  });
  await new Promise<void>((r) => server.listen(port, host, r));
  c.teardown(() => new Promise<void>((r) => server.close(() => r())));
  return { server, port: (server.address() as AddressInfo).port, hits: () => n };
}

t.test('a frontend on an address the node gets later no longer takes the node\'s connects; it does again once the address goes', { skip: agentProcessSkip() || (cgroupV2Mount() ? false : 'no cgroup v2 mounted') }, async (t) => {
  const c = new Cleanup(t);
  const cg = join(cgroupV2Mount()!, `cellium-test-socknode-${uniq()}`);
  mkdirSync(cg);
  c.teardown(() => rmdirSync(cg));
  // the VIPs are not routed while they are no node's: an untranslated connect is answered here (EACCES)
  ip('route', 'add', 'prohibit', VIPS);
  c.teardown(() => ip('route', 'del', 'prohibit', VIPS));
  const dev = `csn${uniq().slice(-8)}`;
  ip('link', 'add', dev, 'type', 'veth', 'peer', 'name', `${dev}p`);
  c.teardown(() => ip('link', 'del', dev));
  ip('link', 'set', dev, 'up');
  ip('link', 'set', `${dev}p`, 'up');

  const a = agentProcess(c, 'socknode', POOL, ['--bpf-lb-sock=true', `--cgroup-root=${cg}`]);
  const agent = a.start();
  t.ok(await a.up(agent), 'the agent serves the API', { log: agent.log() });
  t.ok(await until(() => /socket load balancing attached/.test(agent.log()), 10000), 'socket load balancing attached', { log: agent.log() });

  const backend = await echo(c, '127.0.0.1');
  const port = backend.port; // the service's port: free on this machine (the backend holds it on loopback only)
  const flags = { type: 'ClusterIP' as const, name: 'later', namespace: 'default' };
  await a.client.putService(1, { 'frontend-address': { ip: VIP, port, protocol: 'tcp' }, 'backend-addresses': [{ ip: '127.0.0.1', port }], flags });
  const state = async (): Promise<string | undefined> => (await a.client.getService(1)).status?.['cellium-state']?.state;
  t.ok(await until(async () => (await state()) === 'done', 10000), 'the frontend is in the kernel maps');
  const { inside } = await cgroupClients(t, c, cg);
  t.same(await inside.ask('tcp', VIP, String(port)), ['ok', `${VIP}:${port}`], 'the client reaches the service at the VIP');
  t.equal(backend.hits(), 1, 'its backend served it');

  // the node gets the address, and a server of its own listens there
  ip('addr', 'add', `${VIP}/32`, 'dev', dev);
  c.teardown(() => {
    try {
      ip('addr', 'del', `${VIP}/32`, 'dev', dev);
    } catch {
      // already removed by the test
    }
  });
  t.ok(await until(async () => (await state()) === 'disabled', 10000), 'the frontend is disabled');
  const own = await echo(c, VIP, port);
  t.same(await inside.ask('tcp', VIP, String(port)), ['ok', `${VIP}:${port}`], 'the client\'s connect to the node\'s address...');
  t.equal(own.hits(), 1, '...reaches the node\'s own server');
  t.equal(backend.hits(), 1, 'and not the service\'s backend');
  const taken = await a.client.putService(2, { 'frontend-address': { ip: VIP, port: port + 1, protocol: 'tcp' }, 'backend-addresses': [{ ip: '127.0.0.1', port }], flags }).then(() => 'created', (err: Error) => err.message);
  t.match(taken, new RegExp(`${VIP.replace(/\./g, '\\.')} cannot be a service frontend of type ClusterIP: it is an address of the node \\(interface ${dev}\\)`), 'a new frontend on it: refused, naming the interface');

  // the address goes: the service takes the VIP's connects again
  await new Promise<void>((r) => own.server.close(() => r()));
  ip('addr', 'del', `${VIP}/32`, 'dev', dev);
  t.ok(await until(async () => (await state()) === 'done', 10000), 'the frontend is enabled again');
  t.same(await inside.ask('tcp', VIP, String(port)), ['ok', `${VIP}:${port}`], 'the client reaches the service again');
  t.equal(backend.hits(), 2, 'through its backend');

  // the address comes while the agent is down: the next start restores the service disabled and
  // removes its frontend from the kernel maps (the pinned programs kept translating meanwhile)
  agent.proc.kill('SIGTERM');
  await agent.exited;
  ip('addr', 'add', `${VIP}/32`, 'dev', dev);
  const again = a.start();
  t.ok(await a.up(again), 'the agent starts again', { log: again.log() });
  t.equal(await state(), 'disabled', 'the stored service is restored disabled');
  t.ok(await until(async () => !(await cli(a.socketPath, 'bpf', 'lb', 'list', '--bpf-root', a.root)).out.includes(VIP), 10000), 'its frontend is removed from the kernel maps');
  const own2 = await echo(c, VIP, port);
  t.same(await inside.ask('tcp', VIP, String(port)), ['ok', `${VIP}:${port}`], 'the client\'s connect to the node\'s address...');
  t.equal(own2.hits(), 1, '...reaches the node\'s own server');
  t.equal(backend.hits(), 2, 'not the backend');
});
