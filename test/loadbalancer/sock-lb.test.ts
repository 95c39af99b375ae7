// Socket-level load balancing for host processes (issue 14, point 5). Privileged, the whole agent
// as a process (bin/cellium-agent.js, BPF datapath) with --cgroup-root at a cgroup of this test's
// own (a child of the cgroup v2 mount; only the test's client process is moved into it, never
// anything at the machine's root cgroup). Two backend pods (TCP and UDP echo), a ClusterIP with a
// TCP and a UDP port, and one without backends. A client in the host network namespace inside the
// cgroup reaches the backends through the VIP over TCP, UDP (sendto and connected) and an
// IPv4-mapped IPv6 socket, and sees the VIP as its peer and as the UDP reply's source; a service
// without backends is refused at once, a port the VIP lacks is not translated (as if no service
// existed: the wildcard entry never breaks a port no service owns); a client outside the
// cgroup is not translated (a prohibit route on the VIPs answers it with EACCES). After kill -9
// the pinned links keep translating; a restart swaps their programs in place (same links, one
// program per hook), a link detached from outside is attached again, another --cgroup-root moves
// them, and a start with --bpf-lb-sock=false detaches them. Flags that cannot be used
// stop the agent with the flag and the fix; the memory datapath says in one line it attaches
// nothing.
import t from 'tap';
import { existsSync, mkdirSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BpfMap, cgroupPrograms, cgroupV2Mount, detachCgroup, pinnedCgroupLink, type CgroupHook } from '../../src/bpf/index.js';
import { REVERSE_SK_MAP_NAMES, reverseSkEntries } from '../../src/maps/lb/index.js';
import { resolveCgroupRoot, SOCK_HOOKS, sockLinkPath } from '../../src/cells/loadbalancer/index.js';
import { ConfigError } from '../../src/hive/errors.js';
import { ip, uniq } from '../bpf/fixtures/topology.js';
import {
  Cleanup, agentProcess, agentProcessSkip, allocatePod, cli, endpointRequest, spawnAgent, tempDir, until, type Pod,
} from '../root-datapath-agent/fixtures.js';
import { cgroupClients, listen, loopbackEchoes, tcpEchoes } from './sock-fixtures.js';

const POOL = '10.183.0.0/24';
const VIPS = '10.183.96.0/24';
const VIP = '10.183.96.10';
const EMPTY_VIP = '10.183.96.20';
const VIPS6 = 'fd00:183:96::/64';
const VIP6 = 'fd00:183:96::10';

const hits = (pod: Pod, id: string): number => pod.traffic.output.split('\n').filter((l) => l === `got ${id}`).length;

/** The links pinned for every hook: link and program ids. */
function links(root: string): Record<string, { linkId: number; progId: number } | undefined> {
  return Object.fromEntries(SOCK_HOOKS.map((h) => [h, pinnedCgroupLink(sockLinkPath(root, h))]));
}

/** How many programs each hook of the cgroup holds. */
function attachedPerHook(cg: string): Record<string, number> {
  return Object.fromEntries(SOCK_HOOKS.map((h: CgroupHook) => [h, cgroupPrograms(cg, h).length]));
}

t.test('--cgroup-root: the cgroup2 mount of /proc/mounts by default, a ConfigError naming the flag and the fix otherwise', (t) => {
  const hybrid = 'cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0\ncgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n';
  t.equal(cgroupV2Mount(hybrid), '/sys/fs/cgroup/unified', 'hybrid cgroups: the v2 mount');
  t.equal(cgroupV2Mount('cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n'), '/sys/fs/cgroup', 'unified cgroups: /sys/fs/cgroup');
  t.equal(cgroupV2Mount('cgroup /sys/fs/cgroup/cpu cgroup rw 0 0\n'), undefined, 'v1 only: none');
  const none = (() => {
    try {
      resolveCgroupRoot('', 'cgroup /sys/fs/cgroup/cpu cgroup rw 0 0\n');
    } catch (err) {
      return err;
    }
    return undefined;
  })();
  t.ok(none instanceof ConfigError, 'no cgroup2 mount: a ConfigError');
  t.equal((none as ConfigError).key, 'cgroup-root');
  t.match((none as Error).message, /no cgroup2 mount; fix: .*--cgroup-root.*--bpf-lb-sock=false/);
  t.throws(() => resolveCgroupRoot('/nonexistent-cellium-cgroup'), { key: 'cgroup-root', message: /--cgroup-root=\/nonexistent-cellium-cgroup does not exist; fix: name a cgroup v2 directory/ });
  t.throws(() => resolveCgroupRoot(import.meta.filename), { key: 'cgroup-root', message: /is not a directory; fix:/ });
  t.throws(() => resolveCgroupRoot('/tmp'), { key: 'cgroup-root', message: /--cgroup-root=\/tmp is not on a cgroup v2 file system \(cgroup2\); fix:/ });
  t.end();
});

t.test('bad --bpf-lb-sock and --cgroup-root stop the agent with the flag and the fix', { skip: agentProcessSkip() }, async (t) => {
  const cases: [string, RegExp][] = [
    ['--cgroup-root=sys/fs/cgroup', /cgroup-root.*expected an absolute path to a cgroup v2 directory/],
    ['--cgroup-root=/tmp', /--cgroup-root=\/tmp is not on a cgroup v2 file system \(cgroup2\); fix: name a cgroup v2 directory/],
    ['--cgroup-root=/nonexistent-cellium-cgroup', /--cgroup-root=\/nonexistent-cellium-cgroup does not exist; fix:/],
    ['--bpf-lb-sock=maybe', /bpf-lb-sock.*expected a boolean \(true or false\), got \\?"maybe\\?"/],
  ];
  for (const [flag, want] of cases) {
    const c = new Cleanup(t);
    const a = agentProcess(c, 'socklb-bad', POOL, ['--bpf-lb-sock=true', flag]);
    const agent = a.start();
    await Promise.race([agent.exited, new Promise((r) => setTimeout(r, 30000))]);
    t.not(agent.proc.exitCode, null, `${flag}: the agent exits`);
    t.not(agent.proc.exitCode, 0, `${flag}: with an error`);
    t.match(agent.log(), want, `${flag}: the log names the flag and what is wrong`);
  }
});

t.test('the memory datapath attaches no socket programs and says so in one line', { skip: existsSync(join(import.meta.dirname, '../../dist/src/cmd/agent.js')) ? false : 'dist/ not built: run npm run build' }, async (t) => {
  const c = new Cleanup(t);
  const dir = tempDir(c, 'socklb-mem');
  const agent = spawnAgent(c, [`--socket-path=${join(dir, 's.sock')}`, `--state-dir=${join(dir, 'state')}`, `--cni-delete-queue-dir=${join(dir, 'q')}`, `--bpf-root=${join(dir, 'bpf')}`, '--datapath-mode=memory', '--ipv4-range=10.183.1.0/24']);
  t.ok(await until(() => /socket load balancing not attached/.test(agent.log()), 30000), 'one log line', { log: agent.log() });
  t.equal(agent.log().split('\n').filter((l) => /socket load balancing/.test(l)).length, 1, 'exactly one');
  t.notOk(existsSync(join(dir, 'bpf', 'links')), 'nothing pinned');
});

t.test('host processes in the cgroup reach ClusterIPs through socket load balancing, across kill -9 and restart', { skip: agentProcessSkip() || (cgroupV2Mount() ? false : 'no cgroup v2 mounted') }, async (t) => {
  const c = new Cleanup(t);
  // the test's own cgroup, removed last (after its client process is gone)
  const cg = join(cgroupV2Mount()!, `cellium-test-socklb-${uniq()}`);
  mkdirSync(cg);
  c.teardown(() => rmdirSync(cg));
  const cg2 = join(cgroupV2Mount()!, `cellium-test-socklb2-${uniq()}`); // a later --cgroup-root
  mkdirSync(cg2);
  c.teardown(() => rmdirSync(cg2));
  // the VIPs are not routed: an untranslated connect is answered by this route (EACCES), not sent anywhere
  ip('route', 'add', 'prohibit', VIPS);
  c.teardown(() => ip('route', 'del', 'prohibit', VIPS));
  ip('-6', 'route', 'add', 'prohibit', VIPS6);
  c.teardown(() => ip('-6', 'route', 'del', 'prohibit', VIPS6));

  const a = agentProcess(c, 'socklb', POOL, ['--bpf-lb-sock=true', `--cgroup-root=${cg}`]);
  let agent = a.start();
  t.ok(await a.up(agent), 'the agent serves the API', { log: agent.log() });
  t.ok(await until(() => /socket load balancing attached/.test(agent.log()), 10000), 'socket load balancing attached', { log: agent.log() });
  t.same(attachedPerHook(cg), Object.fromEntries(SOCK_HOOKS.map((h) => [h, 1])), 'one program at each of the eight hooks of the test cgroup');

  const backends = [await allocatePod(c, a.client, 'sb-0'), await allocatePod(c, a.client, 'sb-1')];
  for (const b of backends) await a.client.createEndpoint(0, endpointRequest(b, ['k8s:app=sock-backend']));
  const tcpIds = await Promise.all(backends.map((b) => listen(b, 'tcpecho', 8080)));
  const udpIds = await Promise.all(backends.map((b) => listen(b, 'udpecho', 5353)));
  const flags = { type: 'ClusterIP' as const, name: 'sock', namespace: 'default' };
  await a.client.putService(1, { 'frontend-address': { ip: VIP, port: 80, protocol: 'tcp' }, 'backend-addresses': backends.map((b) => ({ ip: b.ip, port: 8080 })), flags });
  await a.client.putService(2, { 'frontend-address': { ip: VIP, port: 53, protocol: 'udp' }, 'backend-addresses': backends.map((b) => ({ ip: b.ip, port: 5353, protocol: 'udp' })), flags });
  await a.client.putService(3, { 'frontend-address': { ip: EMPTY_VIP, port: 80, protocol: 'tcp' }, 'backend-addresses': [], flags: { ...flags, name: 'empty' } });
  const lo6 = await loopbackEchoes(c);
  await a.client.putService(4, { 'frontend-address': { ip: VIP6, port: 80, protocol: 'tcp' }, 'backend-addresses': [{ ip: '::1', port: lo6.tcpPort }], flags: { ...flags, name: 'v6' } });
  await a.client.putService(5, { 'frontend-address': { ip: VIP6, port: 53, protocol: 'udp' }, 'backend-addresses': [{ ip: '::1', port: lo6.udpPort, protocol: 'udp' }], flags: { ...flags, name: 'v6' } });
  t.ok(await until(async () => (await a.client.listServices()).every((s) => s.status?.['cellium-state']?.state === 'done'), 10000), 'every frontend is done in the kernel maps');

  const { inside, outside } = await cgroupClients(t, c, cg);

  const N = 20;
  t.equal(await tcpEchoes(t, inside, VIP, 80, N), N, `${N} TCP connections to ${VIP}:80 echoed, getpeername showing the VIP`);
  await until(() => tcpIds.reduce((s, id, i) => s + hits(backends[i]!, id), 0) >= N, 3000, 50);
  for (const [i, b] of backends.entries()) t.ok(hits(b, tcpIds[i]!) > 0, `${b.name} served ${hits(b, tcpIds[i]!)} of them`);

  t.same(await inside.ask('udp', VIP, '53'), ['ok', `${VIP}:53`], 'UDP sendto the VIP: the echo comes from the VIP (recvmsg)');
  t.same(await inside.ask('udpc', VIP, '53'), ['ok', `${VIP}:53`, `${VIP}:53`], 'connected UDP: getpeername and the echo\'s source are the VIP');
  t.ok(udpIds.some((id, i) => hits(backends[i]!, id) > 0), 'a UDP backend answered');
  t.same(await inside.ask('tcp', `::ffff:${VIP}`, '80'), ['ok', `[::ffff:${VIP}]:80`], 'an IPv6 socket to the IPv4-mapped VIP is translated too');
  t.same(await inside.ask('tcp', EMPTY_VIP, '80'), ['err', 'ECONNREFUSED'], 'a service without backends: the connect is refused at once');
  // a port no frontend serves: not translated and not failed (the VIP's wildcard entry is not
  // read by socket LB): the connect goes on as if no service existed, and the prohibit route answers
  t.same(await inside.ask('tcp', VIP, '81'), ['err', 'EACCES'], 'a TCP port the VIP does not have: untranslated, as if no service existed (not EHOSTUNREACH from its wildcard entry)');
  t.same(await inside.ask('udp', VIP, '54'), ['err', 'EACCES'], 'a UDP port the VIP does not have: untranslated too');
  t.same(await outside.ask('tcp', VIP, '80'), ['err', 'EACCES'], 'a process outside the cgroup is not translated (the prohibit route answers)');

  t.same(await inside.ask('tcp', VIP6, '80'), ['ok', `[${VIP6}]:80`], 'IPv6: TCP to the VIP reaches the backend on ::1, getpeername shows the VIP');
  t.same(await inside.ask('udp', VIP6, '53'), ['ok', `[${VIP6}]:53`], 'IPv6: UDP sendto, the echo comes from the VIP');
  t.same(await inside.ask('udpc', VIP6, '53'), ['ok', `[${VIP6}]:53`, `[${VIP6}]:53`], 'IPv6: connected UDP');
  t.equal(lo6.hits(), 3, 'the IPv6 backends served them');
  t.same(await inside.ask('tcp', VIP6, '81'), ['err', 'EACCES'], 'IPv6: a port the VIP does not have: untranslated, as if no service existed');
  t.same(await outside.ask('tcp', VIP6, '80'), ['err', 'EACCES'], 'IPv6: a process outside the cgroup is not translated');

  const rev = BpfMap.openPinned(join(a.root, REVERSE_SK_MAP_NAMES.reverseSk4));
  try {
    const entries = reverseSkEntries(rev, 4);
    t.ok(entries.some((e) => e.frontend === VIP && e.frontendPort === 53 && backends.some((b) => b.ip === e.backend) && e.backendPort === 5353), 'cellium_lb4_reverse_sk maps a UDP socket\'s backend back to the VIP');
  } finally {
    rev.close();
  }

  const listed = await cli(a.socketPath, 'bpf', 'lb', 'list', '--sock', '--bpf-root', a.root);
  t.equal(listed.code, 0, `cellium bpf lb list --sock: ${listed.err}`);
  t.match(listed.out, /^SOCKET COOKIE\s+BACKEND\s+FRONTEND \(REVNAT_ID\)$/m, 'its header');
  t.match(listed.out, new RegExp(`^\\d+\\s+10\\.183\\.0\\.\\d+:5353\\s+${VIP.replace(/\./g, '\\.')}:53 \\(2\\)$`, 'm'), 'a UDP socket\'s backend -> the VIP, service 2');
  const json = await cli(a.socketPath, '-o', 'json', 'bpf', 'lb', 'list', '--sock', '--bpf-root', a.root);
  t.ok((JSON.parse(json.out) as { frontend: string; revNat: number }[]).some((e) => e.frontend === `${VIP}:80` && e.revNat === 1), '-o json: a TCP socket -> the VIP:80, service 1');
  const missing = await cli(a.socketPath, 'bpf', 'lb', 'list', '--sock', '--bpf-root', join(a.dir, 'no-such-root'));
  t.not(missing.code, 0, 'no maps pinned: an error');
  t.match(missing.err, /no reverse-socket map pinned at .*: is the agent running with --datapath-mode=bpf, --bpf-lb-sock=true/, 'naming what to check');

  const before = links(a.root);
  t.ok(SOCK_HOOKS.every((h) => before[h]), 'a pinned link per hook');
  agent.proc.kill('SIGKILL');
  await agent.exited;
  t.same(await inside.ask('tcp', VIP, '80'), ['ok', `${VIP}:80`], 'agent down: a new connection through the VIP (the pinned links)');
  t.same(await inside.ask('udp', VIP, '53'), ['ok', `${VIP}:53`], 'agent down: UDP through the VIP');

  agent = a.start();
  t.ok(await a.up(agent), 'the restarted agent serves the API', { log: agent.log() });
  t.ok(await until(() => /programs replaced atomically/.test(agent.log()), 10000), 'the restart replaced the programs in place', { log: agent.log() });
  const after = links(a.root);
  for (const h of SOCK_HOOKS) {
    t.equal(after[h]?.linkId, before[h]?.linkId, `${h}: the same link (never detached)`);
    t.not(after[h]?.progId, before[h]?.progId, `${h}: a new program in it`);
  }
  t.same(attachedPerHook(cg), Object.fromEntries(SOCK_HOOKS.map((h) => [h, 1])), 'still one program per hook');
  t.same(await inside.ask('tcp', VIP, '80'), ['ok', `${VIP}:80`], 'after the restart: TCP through the VIP');
  t.same(await inside.ask('udpc', VIP, '53'), ['ok', `${VIP}:53`, `${VIP}:53`], 'after the restart: UDP through the VIP');

  // a link detached behind the agent's back is attached again within a prune round (1 s here)
  t.ok(detachCgroup(sockLinkPath(a.root, 'connect4')), 'connect4 detached from outside the agent');
  t.ok(await until(() => cgroupPrograms(cg, 'connect4').length === 1 && pinnedCgroupLink(sockLinkPath(a.root, 'connect4')) !== undefined, 10000), 'the agent attached it again', { log: agent.log() });
  t.match(agent.log(), /programs found detached; attaching them again/, 'and said so');
  t.same(await inside.ask('tcp', VIP, '80'), ['ok', `${VIP}:80`], 'TCP through the VIP again');

  // another --cgroup-root: the programs move (a new link on the new cgroup first, then the old one released)
  agent.proc.kill('SIGTERM');
  await agent.exited;
  const moved = agentProcessWith(a, ['--bpf-lb-sock=true', `--cgroup-root=${cg2}`], c);
  t.ok(await a.up(moved), 'the agent with another --cgroup-root serves the API', { log: moved.log() });
  t.ok(await until(() => /"moved":8/.test(moved.log()), 10000), 'every link moved', { log: moved.log() });
  t.same(attachedPerHook(cg2), Object.fromEntries(SOCK_HOOKS.map((h) => [h, 1])), 'one program per hook at the new cgroup');
  t.same(attachedPerHook(cg), Object.fromEntries(SOCK_HOOKS.map((h) => [h, 0])), 'none left at the old one');
  t.same(await inside.ask('tcp', VIP, '80'), ['err', 'EACCES'], 'the client in the old cgroup is no longer translated');
  writeFileSync(join(cg2, 'cgroup.procs'), String(inside.proc.pid));
  t.same(await inside.ask('tcp', VIP, '80'), ['ok', `${VIP}:80`], 'moved into the new cgroup, it is');

  moved.proc.kill('SIGTERM');
  await moved.exited;
  const off = agentProcessWith(a, ['--bpf-lb-sock=false', `--cgroup-root=${cg2}`], c);
  t.ok(await a.up(off), 'the agent with --bpf-lb-sock=false serves the API', { log: off.log() });
  t.ok(await until(() => /detached the socket programs/.test(off.log()), 10000), 'it detached the socket programs', { log: off.log() });
  t.same(attachedPerHook(cg2), Object.fromEntries(SOCK_HOOKS.map((h) => [h, 0])), 'no program at any hook of the cgroup');
  t.ok(SOCK_HOOKS.every((h) => !existsSync(sockLinkPath(a.root, h))), 'no link pins');
  t.notOk(Object.values(REVERSE_SK_MAP_NAMES).some((m) => existsSync(join(a.root, m))), 'no reverse-socket map pins');
  t.same(await inside.ask('tcp', VIP, '80'), ['err', 'EACCES'], 'the client is no longer translated');
});

/** The agent of `a` started with other socket flags (the rest of its flags as agentProcess gives them). */
function agentProcessWith(a: ReturnType<typeof agentProcess>, extra: string[], c: Cleanup): ReturnType<typeof spawnAgent> {
  const args = [
    `--socket-path=${a.socketPath}`, `--state-dir=${join(a.dir, 'state')}`, `--cni-delete-queue-dir=${join(a.dir, 'q')}`,
    `--bpf-root=${a.root}`, `--ipv4-range=${POOL}`, '--datapath-mode=bpf', '--bpf-map-prune-interval=1s', ...extra,
  ];
  return spawnAgent(c, args);
}
