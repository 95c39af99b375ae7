// Services never take the node's own addresses (issue 22, point 1). Privileged: the whole agent
// as a process (memory datapath) in a network namespace of the test's own, whose veth interface
// carries the "node" addresses (IPv4, IPv6 and the interface's IPv6 link-local one), with a local
// route of a whole prefix (AnyIP); the pod pools
// give the gateways; --api-listen-address makes the agent's own API a TCP address (0.0.0.0, or
// 127.0.0.1 with a token where the agent requires TCP authentication). Every service
// type but NodePort on each of them is a 460 naming the address and why (HostPort always: no pod
// spec is its source), a node port outside --node-port-range is a 460 on a node address too, a
// backend that is the agent's API a 461, an import with such an externalIP is refused whole. An
// address added to the interface after a frontend took it disables that frontend (service list,
// GET /service, health, log) and removing it enables it again; a stored service that collides
// when the agent starts again comes back disabled, neither dropped nor applied.
import t from 'tap';
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Transport } from '../../src/api/transport.js';
import { createSpecValidator } from '../../src/api/spec.js';
import { AGENT_BIN, agentProcessSkip } from '../root-e2e/agent-process.js';
import { Cleanup, cli, tempDir, until } from '../root-datapath-agent/fixtures.js';
import { createNetns, ip, ipJson, uniq } from '../root-netlink/netns.js';

const DEV = 'cna0';
const NODE4 = '10.187.50.1';
const NODE6 = 'fd00:187:50::1';
const POOL4 = '10.187.0.0/24';
const GW4 = '10.187.0.1';
const POOL6 = 'fd00:187::/112';
const GW6 = 'fd00:187::1';
const API_PORT = 9234;
const LATER4 = '10.187.60.10';
const LATER6 = 'fd00:187:60::10';
const TYPES = ['ClusterIP', 'ExternalIPs', 'LoadBalancer', 'LocalRedirect'] as const;

interface Res { status: number; body: unknown }

/**
 * The TCP API: on every address, or, where the agent serves TCP only to authenticated clients
 * (--api-token-file, a plain-HTTP token only on loopback), on 127.0.0.1 with a token file. `host`
 * is the listen host, `agent` the backends that are then the agent's API.
 */
function tcpApi(dir: string): { flags: string[]; host: string; agent: string[] } {
  const help = spawnSync(process.execPath, [AGENT_BIN, '--help'], { encoding: 'utf8' }).stdout ?? '';
  if (!help.includes('--api-token-file')) return { flags: [`--api-listen-address=0.0.0.0:${API_PORT}`], host: '0.0.0.0', agent: ['127.0.0.1', NODE4] };
  const file = join(dir, 'api-token');
  writeFileSync(file, `${randomBytes(24).toString('hex')}\n`, { mode: 0o600 });
  return { flags: [`--api-listen-address=127.0.0.1:${API_PORT}`, `--api-token-file=${file}`], host: '127.0.0.1', agent: ['127.0.0.1'] };
}

/** The agent in namespace `ns`, on the state of `dir`, its TCP API as `apiFlags` say; `stop` ends it with SIGTERM. */
function startAgent(c: Cleanup, ns: string, dir: string, apiFlags: readonly string[]) {
  const socketPath = join(dir, 'cellium.sock');
  const args = [
    `--socket-path=${socketPath}`, `--state-dir=${join(dir, 'state')}`, `--cni-delete-queue-dir=${join(dir, 'q')}`, `--bpf-root=${join(dir, 'bpf')}`,
    '--datapath-mode=memory', `--ipv4-range=${POOL4}`, `--ipv6-range=${POOL6}`, ...apiFlags,
  ];
  const proc = spawn('ip', ['netns', 'exec', ns, process.execPath, AGENT_BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  const keep = (d: Buffer): void => void (log = (log + d.toString()).slice(-200_000));
  proc.stdout!.on('data', keep);
  proc.stderr!.on('data', keep);
  const exited = new Promise<void>((r) => proc.on('exit', () => r()));
  const tr = new Transport({ socketPath });
  c.teardown(async () => {
    tr.close();
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
    await exited;
  });
  const call = async (method: string, path: string, body?: unknown): Promise<Res> => (await tr.request(method, path, body === undefined ? {} : { body })) as Res;
  return {
    socketPath, log: () => log, call,
    up: () => until(async () => proc.exitCode === null && (await call('GET', '/service').then((r) => r.status === 200, () => false)), 60000, 100),
    stop: async () => {
      proc.kill('SIGTERM');
      await exited;
    },
  };
}

const spec = (ip: string, port: number, type: string, backends: { ip: string; port: number }[]) => ({
  'frontend-address': { ip, port, protocol: 'tcp' },
  'backend-addresses': backends,
  flags: { type, name: 'svc', namespace: 'default' },
});

const validator = createSpecValidator();

/** The frontend's cellium-state, from a GET /service/{id} answer that matches the API spec (a disabled one included). */
async function stateOf(call: ReturnType<typeof startAgent>['call'], id: number): Promise<{ state?: string; message?: string }> {
  const r = await call('GET', `/service/${id}`);
  const problems = validator.response('GetServiceID', r.status, r.body, { 'content-type': 'application/json' });
  if (problems.length) throw new Error(`GET /service/${id} does not match the spec: ${JSON.stringify(problems)}`);
  return (r.body as { status?: { 'cellium-state'?: { state?: string; message?: string } } }).status?.['cellium-state'] ?? {};
}

const esc = (s: string): string => s.replace(/[.[\]]/g, '\\$&');

t.test('no frontend but NodePort takes an address of the node, its pod gateways or its API; later addresses disable, restore disables', { skip: agentProcessSkip('runs the agent in a network namespace of its own') }, async (t) => {
  const c = new Cleanup(t);
  const ns = createNetns(`cna-${uniq()}`);
  c.teardown(ns.remove);
  ip('-n', ns.name, 'link', 'set', 'lo', 'up');
  ip('-n', ns.name, 'link', 'add', DEV, 'type', 'veth', 'peer', 'name', `${DEV}p`);
  ip('-n', ns.name, 'link', 'set', DEV, 'up');
  ip('-n', ns.name, 'link', 'set', `${DEV}p`, 'up');
  ip('-n', ns.name, 'addr', 'add', `${NODE4}/24`, 'dev', DEV);
  ip('-n', ns.name, '-6', 'addr', 'add', `${NODE6}/64`, 'dev', DEV, 'nodad');
  ip('-n', ns.name, 'route', 'add', 'local', '10.187.70.0/24', 'dev', 'lo');
  const linkLocal = await (async () => {
    let ll: string | undefined;
    await until(() => {
      const a = ipJson<{ addr_info: { local: string; scope: string }[] }>('-n', ns.name, '-6', 'addr', 'show', 'dev', DEV);
      ll = a[0]?.addr_info.find((x) => x.scope === 'link')?.local;
      return ll !== undefined;
    }, 5000, 50);
    return ll;
  })();
  t.ok(linkLocal, `the interface has an IPv6 link-local address (${linkLocal})`);
  const dir = tempDir(c, 'node-addrs');
  const api = tcpApi(dir);
  let agent = startAgent(c, ns.name, dir, api.flags);
  t.ok(await agent.up(), 'the agent serves the API', { log: agent.log() });

  // every type but NodePort, on every kind of node address: 460 naming the address and why
  const node = [
    [NODE4, '127.0.0.1', /it is an address of the node \(interface cna0\)/],
    [NODE6, '::1', /it is an address of the node \(interface cna0\)/],
    [linkLocal!, '::1', /it is an address of the node \(interface cna0\)/],
    [GW4, '127.0.0.1', /it is the pods' gateway address \(pool 10\.187\.0\.0\/24\)/],
    [GW6, '::1', /it is the pods' gateway address \(pool fd00:187::\/112\)/],
  ] as const;
  for (const [addr, backend, why] of node) {
    for (const type of TYPES) {
      const r = await agent.call('PUT', '/service/102', spec(addr, 22, type, [{ ip: backend, port: 2222 }]));
      t.equal(r.status, 460, `${type} on ${addr}:22: 460`);
      t.match(JSON.stringify(r.body), new RegExp(`/body/frontend-address/ip: ${esc(addr)} cannot be a service frontend of type ${type}: ${why.source}`), `${type} on ${addr}: the address and why`);
    }
  }
  // a local route (AnyIP): every address in it is the node's
  t.equal((await agent.call('PUT', '/service/102', spec('10.187.70.5', 22, 'ClusterIP', []))).status, 460, 'a ClusterIP in a local route of the node: 460');
  t.match(JSON.stringify((await agent.call('PUT', '/service/102', spec('10.187.70.5', 22, 'ExternalIPs', []))).body), /10\.187\.70\.5 cannot be a service frontend of type ExternalIPs: it is in a local route of the node \(local 10\.187\.70\.0\/24 dev lo\)/);
  const hp = await agent.call('PUT', '/service/102', spec(NODE4, 8080, 'HostPort', [{ ip: '127.0.0.1', port: 2222 }]));
  t.equal(hp.status, 460, 'HostPort on a node address: 460');
  t.match(JSON.stringify(hp.body), /type HostPort is refused: a HostPort frontend comes from a pod's spec/);
  t.equal((await agent.call('PUT', '/service/102', spec('10.96.187.5', 8080, 'HostPort', []))).status, 460, 'HostPort on any address: 460');
  const np22 = await agent.call('PUT', '/service/102', spec(NODE4, 22, 'NodePort', [{ ip: '127.0.0.1', port: 2222 }]));
  t.equal(np22.status, 460, 'NodePort on a node address outside --node-port-range: 460');
  t.match(JSON.stringify(np22.body), /node port 22 is outside --node-port-range 30000-32767/);
  t.equal((await agent.call('PUT', '/service/103', spec(NODE4, 30022, 'NodePort', [{ ip: '127.0.0.1', port: 2222 }]))).status, 201, 'NodePort on a node address within the range: created (node ports live on the node\'s addresses)');
  t.equal((await agent.call('DELETE', '/service/103')).status, 200);

  // the agent's own API is no backend: where it listens (0.0.0.0: on loopback nor on a node address)
  for (const be of api.agent) {
    const r = await agent.call('PUT', '/service/104', spec('10.96.187.1', 80, 'ClusterIP', [{ ip: be, port: API_PORT }]));
    t.equal(r.status, 461, `backend ${be}:${API_PORT} (the agent's API on ${api.host}): 461`);
    t.match(JSON.stringify(r.body), new RegExp(`/body/backend-addresses/0: ${esc(be)}:${API_PORT} cannot be a backend: it is the agent's own API \\(--api-listen-address ${esc(api.host)}:${API_PORT}\\)`));
  }
  t.equal((await agent.call('PUT', '/service/104', spec('10.96.187.1', 80, 'ClusterIP', [{ ip: '10.96.5.5', port: API_PORT }]))).status, 201, 'that port on another host is a backend like any');
  t.equal((await agent.call('DELETE', '/service/104')).status, 200);

  // an import whose Service has a node address as externalIP is refused whole
  const file = join(dir, 'ext.yaml');
  writeFileSync(file, JSON.stringify({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'ext', namespace: 'default' }, spec: { clusterIP: '10.96.187.20', externalIPs: [NODE4], ports: [{ port: 22 }] } }));
  const imp = await cli(agent.socketPath, 'service', 'import', file);
  t.not(imp.code, 0, 'import with a node address as externalIP: refused');
  t.match(imp.err, new RegExp(`${esc(NODE4)} cannot be a service frontend of type ExternalIPs: it is an address of the node`));
  t.same((await agent.call('GET', '/service')).body, [], 'nothing was created by any refused request');

  // frontends on addresses the node does not have yet
  t.equal((await agent.call('PUT', '/service/10', spec(LATER4, 80, 'ClusterIP', [{ ip: '10.96.5.5', port: 80 }]))).status, 201);
  t.equal((await agent.call('PUT', '/service/11', spec(LATER6, 80, 'LoadBalancer', [{ ip: 'fd00:96::5', port: 80 }]))).status, 201);
  t.ok(await until(async () => (await stateOf(agent.call, 10)).state === 'done' && (await stateOf(agent.call, 11)).state === 'done', 10000), 'both are done in the LB maps');
  // the node gets them: the frontends are disabled
  ip('-n', ns.name, 'addr', 'add', `${LATER4}/32`, 'dev', DEV);
  ip('-n', ns.name, '-6', 'addr', 'add', `${LATER6}/128`, 'dev', DEV, 'nodad');
  t.ok(await until(async () => (await stateOf(agent.call, 10)).state === 'disabled' && (await stateOf(agent.call, 11)).state === 'disabled', 10000), 'an address added later disables the frontend on it');
  t.match(await stateOf(agent.call, 10), { message: `frontend ${LATER4}: it is an address of the node (interface cna0)` }, 'GET /service says why');
  const list = await cli(agent.socketPath, 'service', 'list');
  t.match(list.out, new RegExp(`^10\\s+${esc(LATER4)}:80/TCP\\s+ClusterIP\\s+1 => 10\\.96\\.5\\.5:80/TCP \\(active\\)\\s+disabled: frontend ${esc(LATER4)}: it is an address of the node \\(interface cna0\\)`, 'm'), 'service list shows it disabled, with why');
  t.match(list.out, new RegExp(`^11\\s+\\[${esc(LATER6)}\\]:80/TCP\\s+LoadBalancer\\s+.*disabled: `, 'm'), 'the IPv6 one too');
  t.ok(await until(async () => /2 disabled/.test((await cli(agent.socketPath, 'status', '--verbose')).out), 15000), 'the health says so');
  t.match((await cli(agent.socketPath, 'status', '--verbose')).out, new RegExp(`${esc(LATER4)}:80/TCP disabled: frontend ${esc(LATER4)}: it is an address of the node`));
  t.match(agent.log(), /frontend disabled: it collides with the node/, 'the agent logs it');
  // the addresses go: the frontends are written again
  ip('-n', ns.name, 'addr', 'del', `${LATER4}/32`, 'dev', DEV);
  ip('-n', ns.name, '-6', 'addr', 'del', `${LATER6}/128`, 'dev', DEV);
  t.ok(await until(async () => (await stateOf(agent.call, 10)).state === 'done' && (await stateOf(agent.call, 11)).state === 'done', 10000), 'removing the address enables them again');
  t.ok(await until(async () => /0 disabled/.test((await cli(agent.socketPath, 'status', '--verbose')).out), 15000), 'the health is back');

  // restore: a stored service that now collides comes back disabled, neither dropped nor applied
  await agent.stop();
  ip('-n', ns.name, 'addr', 'add', `${LATER4}/32`, 'dev', DEV);
  agent = startAgent(c, ns.name, dir, api.flags);
  t.ok(await agent.up(), 'the agent starts again', { log: agent.log() });
  t.match(await stateOf(agent.call, 10), { state: 'disabled', message: `frontend ${LATER4}: it is an address of the node (interface cna0)` }, 'the stored service on what is now a node address is disabled');
  t.match(await stateOf(agent.call, 11), { state: 'done' }, 'the other one is restored as it was');
  ip('-n', ns.name, 'addr', 'del', `${LATER4}/32`, 'dev', DEV);
  t.ok(await until(async () => (await stateOf(agent.call, 10)).state === 'done', 10000), 'and enabled once the address is gone');
});
