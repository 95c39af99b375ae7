// Privileged: the real shim binary drives the agent's real hive (memory datapath) over its socket:
// two pods in network namespaces get addresses, routes and a gateway neighbour, ping each other,
// pass CHECK, are deleted twice; malformed calls get the spec's codes; a DEL made while the agent
// is down is queued and replayed by the next agent.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { EndpointManagerToken } from '../../src/cells/endpoint/index.js';
import { IPAMToken } from '../../src/cells/ipam/index.js';
import { hostIfName } from '../../src/cells/cni-server/index.js';
import { buildShim, cni, conf, ipJson, netns, startAgent, uniq } from './agent.js';
import { needs } from '../needs.js';

const skip = needs('root', 'creates network namespaces, veth pairs and host routes');

const POOL = '10.211.0.0/24';

interface AddResult {
  cniVersion: string;
  interfaces: Array<{ name: string; mac: string; sandbox?: string }>;
  ips: Array<{ address: string; gateway: string; interface: number }>;
  routes: Array<{ dst: string; gw?: string }>;
}

t.before(() => {
  if (!skip) buildShim();
});

t.test('ADD, connectivity, CHECK and DEL through the real shim', { skip }, async (t) => {
  const agent = await startAgent(t, POOL);
  const pods = [netns(t, 'cs-a'), netns(t, 'cs-b')];
  const ids = pods.map(() => `e2e-${uniq()}${uniq()}`);
  const results: AddResult[] = [];
  for (const [i, ns] of pods.entries()) {
    const run = await cni('ADD', { containerId: ids[i]!, netns: ns.path, args: `IgnoreUnknown=1;K8S_POD_NAMESPACE=e2e;K8S_POD_NAME=pod${i}` }, conf(agent));
    t.equal(run.code, 0, run.stdout + run.stderr);
    results.push(JSON.parse(run.stdout) as AddResult);
  }
  const [a, b] = results as [AddResult, AddResult];
  const ipOf = (r: AddResult) => r.ips[0]!.address.split('/')[0]!;
  t.match(a, { cniVersion: '1.0.0', interfaces: [{ name: hostIfName(ids[0]!, 'eth0') }, { name: 'eth0', sandbox: pods[0]!.path }], ips: [{ address: /^10\.211\.0\.\d+\/32$/, gateway: '10.211.0.1', interface: 1 }] });

  const addrs = ipJson<{ addr_info: Array<{ family: string; local: string; prefixlen: number }>; mtu: number; address: string }>('-n', pods[0]!.name, 'addr', 'show', 'eth0');
  t.same(addrs[0]!.addr_info.filter((x) => x.family === 'inet').map((x) => `${x.local}/${x.prefixlen}`), [a.ips[0]!.address], 'address in the pod');
  t.equal(addrs[0]!.address, a.interfaces[1]!.mac, 'the MAC in the result is the pod side');
  const routes = ipJson<{ dst: string; gateway?: string; flags: string[] }>('-n', pods[0]!.name, 'route', 'show', 'default');
  t.match(routes, [{ dst: 'default', gateway: '10.211.0.1', flags: ['onlink'] }], 'default route via the gateway, onlink');
  const neigh = ipJson<{ dst: string; lladdr: string; state: string[] }>('-n', pods[0]!.name, 'neigh', 'show', 'dev', 'eth0');
  t.match(neigh, [{ dst: '10.211.0.1', lladdr: a.interfaces[0]!.mac, state: ['PERMANENT'] }], 'permanent gateway neighbour -> host side');
  const hostRoute = ipJson<{ dst: string; dev: string }>('route', 'show', `${ipOf(a)}/32`);
  t.match(hostRoute, [{ dst: ipOf(a), dev: a.interfaces[0]!.name }], 'host route to the pod via lxc');
  t.equal(agent.h.get(EndpointManagerToken).lookup(`cni-attachment-id:${ids[0]}:eth0`)?.state, 'ready');

  const ping = (from: string, to: string) => execFileSync('ip', ['netns', 'exec', from, 'ping', '-c1', '-W2', to], { encoding: 'utf8' });
  t.match(ping(pods[0]!.name, ipOf(b)), /1 received/, 'pod a pings pod b');
  t.match(ping(pods[1]!.name, ipOf(a)), /1 received/, 'pod b pings pod a');

  const check = await cni('CHECK', { containerId: ids[0]!, netns: pods[0]!.path }, conf(agent, { prevResult: a }));
  t.same([check.code, check.stdout], [0, ''], 'CHECK passes');
  const wrong = await cni('CHECK', { containerId: ids[0]!, netns: pods[0]!.path }, conf(agent, { prevResult: b }));
  t.equal(wrong.code, 1);
  t.match(JSON.parse(wrong.stdout), { code: 100 });

  for (const round of [1, 2]) {
    const del = await cni('DEL', { containerId: ids[0]!, netns: pods[0]!.path }, conf(agent, { prevResult: a }));
    t.same([del.code, del.stdout], [0, ''], `DEL #${round} succeeds`);
  }
  t.notOk(ipJson<{ ifname: string }>('link').some((l) => l.ifname === a.interfaces[0]!.name), 'host side gone');
  t.equal(agent.h.get(IPAMToken).ownerOf(ipOf(a)), undefined, 'IP released');
  t.equal(agent.h.get(EndpointManagerToken).lookup(`cni-attachment-id:${ids[0]}:eth0`), undefined, 'endpoint gone');

  execFileSync('ip', ['netns', 'del', pods[1]!.name]);
  const gone = await cni('DEL', { containerId: ids[1]!, netns: pods[1]!.path }, conf(agent));
  t.equal(gone.code, 0, 'DEL with the namespace already gone succeeds');
  t.equal(agent.h.get(EndpointManagerToken).getEndpoints().length, 0);
});

t.test('malformed calls get the spec codes through the shim', { skip }, async (t) => {
  const agent = await startAgent(t, '10.211.1.0/24');
  const ns = netns(t, 'cs-m');
  const id = `bad-${uniq()}`;
  const cases: Array<[string, Promise<{ code: number | null; stdout: string }>, number, RegExp]> = [
    ['ADD without CNI_NETNS', cni('ADD', { containerId: id }, conf(agent)), 7, /CNI_NETNS/],
    ['stdin not JSON', cni('ADD', { containerId: id, netns: ns.path }, '{"cniVersion":'), 6, /./],
    ['unknown cniVersion', cni('ADD', { containerId: id, netns: ns.path }, conf(agent, {}, '9.9.9')), 1, /./],
    ['netns that does not exist', cni('ADD', { containerId: id, netns: '/var/run/netns/none-such' }, conf(agent)), 7, /CNI_NETNS/],
    ['unknown CNI_ARGS key', cni('ADD', { containerId: id, netns: ns.path, args: 'FOO=1' }, conf(agent)), 7, /FOO/],
    ['bad mtu', cni('ADD', { containerId: id, netns: ns.path }, conf(agent, { mtu: 10 })), 7, /mtu/],
  ];
  for (const [name, run, code, msg] of cases) {
    const r = await run;
    t.equal(r.code, 1, `${name}: exit 1`);
    t.match(JSON.parse(r.stdout), { code, msg }, `${name}: code ${code}`);
  }
  t.equal(agent.h.get(EndpointManagerToken).getEndpoints().length, 0, 'nothing created');
});

t.test('a DEL made while the agent is down is queued and replayed by the next agent', { skip }, async (t) => {
  const first = await startAgent(t, '10.211.2.0/24');
  const ns = netns(t, 'cs-q');
  const id = `queue-${uniq()}`;
  const add = await cni('ADD', { containerId: id, netns: ns.path }, conf(first));
  t.equal(add.code, 0, add.stdout);
  const lxc = hostIfName(id, 'eth0');
  await first.h.hive.stop();
  const del = await cni('DEL', { containerId: id, netns: ns.path }, conf(first), { CELLIUM_CNI_DELETE_QUEUE: first.queueDir });
  t.same([del.code, del.stdout], [0, ''], 'DEL succeeds while the agent is down');
  t.equal(readdirSync(first.queueDir).length, 1, 'and is queued');
  t.ok(ipJson<{ ifname: string }>('link').some((l) => l.ifname === lxc), 'the veth is still there');
  const second = await startAgent(t, '10.211.2.0/24', { config: { 'cni-delete-queue-dir': first.queueDir } });
  t.same(readdirSync(first.queueDir), [], 'the next agent replayed the queue');
  t.notOk(ipJson<{ ifname: string }>('link').some((l) => l.ifname === lxc), 'and removed the veth');
  t.ok(second.socketPath);
});

t.test('STATUS and GC (CNI 1.1) through the shim', { skip }, async (t) => {
  const agent = await startAgent(t, '10.211.3.0/24');
  const status = await cni('STATUS', { containerId: '' }, conf(agent, {}, '1.1.0'));
  t.same([status.code, status.stdout], [0, ''], 'STATUS: ready');
  const pods = [netns(t, 'cs-g1'), netns(t, 'cs-g2')];
  const ids = pods.map(() => `gc-${uniq()}`);
  for (const [i, ns] of pods.entries()) t.equal((await cni('ADD', { containerId: ids[i]!, netns: ns.path }, conf(agent, {}, '1.1.0'))).code, 0);
  const gc = await cni('GC', { containerId: '' }, conf(agent, { 'cni.dev/valid-attachments': [{ containerID: ids[0], ifname: 'eth0' }] }, '1.1.0'));
  t.same([gc.code, gc.stdout], [0, ''], 'GC succeeds');
  const manager = agent.h.get(EndpointManagerToken);
  t.ok(manager.lookup(`cni-attachment-id:${ids[0]}:eth0`), 'the valid attachment is kept');
  t.notOk(manager.lookup(`cni-attachment-id:${ids[1]}:eth0`), 'the stale one is removed');
  t.notOk(ipJson<{ ifname: string }>('link').some((l) => l.ifname === hostIfName(ids[1]!, 'eth0')), 'with its veth');
  t.equal(Object.keys(agent.h.get(IPAMToken).status()[0]!.allocated).length, 1, 'and its IP');
  t.equal((await cni('DEL', { containerId: ids[0]!, netns: pods[0]!.path }, conf(agent, {}, '1.1.0'))).code, 0);
});
