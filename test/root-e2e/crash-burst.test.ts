// Privileged, the deployed shape (issue 11, "no leaks after a crash"): the real `cellium-agent`
// process with the BPF datapath, driven by the built shim. A quarter of 80 ADDs run concurrently
// and are acknowledged, then the other 60 at once; as soon as the agent works on one of them it is
// killed with SIGKILL (mid-burst: the others are in flight or not started). The restarted agent,
// then a CNI GC whose valid attachments are exactly the acknowledged ADDs, must leave: no host veth of an unacknowledged ADD, no stale entry in the
// pinned maps (cellium_lxc, cellium_ipcache, the policy maps), no IP in IPAM but the acknowledged
// ones, and every acknowledged ADD restored with the endpoint ID, IP and identity it had.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { openIPCacheMap, openLxcMap } from '../../src/maps/index.js';
import { endpointPrograms, pinnedEndpoints } from '../../src/cells/datapath-bpf/lxc/index.js';
import { endpointOfPolicyMap } from '../../src/cells/datapath/index.js';
import { hostIfName, JOURNAL_DIR } from '../../src/cells/cni-server/index.js';
import { cidrContains, parseCidr } from '../../src/cells/ipam/index.js';
import { Cleanup, agentProcess, agentProcessSkip, until, type spawnAgent } from '../root-datapath-agent/fixtures.js';
import { ip } from '../root-netlink/netns.js';
import { runShim, type ShimRun } from '../cni-shim/run-shim.js';
import { buildShim, cni, uniq } from './agent.js';

const N = 80;
const POOL = '10.247.0.0/24';

interface AddResult {
  interfaces: Array<{ name: string }>;
  ips: Array<{ address: string }>;
}

/** id, IP and identity of each endpoint the state directory holds, by container id. */
function storedEndpoints(stateDir: string): Map<string, { id: number; ip: string; identity: number }> {
  const out = new Map<string, { id: number; ip: string; identity: number }>();
  for (const name of readdirSync(stateDir).filter((n) => /^\d+$/.test(n))) {
    const m = (JSON.parse(readFileSync(join(stateDir, name, 'ep_config.json'), 'utf8')) as { model: ModelLike }).model;
    out.set(m.status['external-identifiers']['container-id'], { id: m.id, ip: m.status.networking.addressing[0]!.ipv4, identity: m.status.identity.id });
  }
  return out;
}

interface ModelLike {
  id: number;
  status: { identity: { id: number }; networking: { addressing: Array<{ ipv4: string }> }; 'external-identifiers': Record<string, string> };
}

const linkExists = (name: string): boolean => existsSync(`/sys/class/net/${name}`);

/** The agent's log lines, parsed (lines that are not JSON are left out). */
function logRecords(agent: ReturnType<typeof spawnAgent>): Array<Record<string, unknown>> {
  return agent.log().split('\n').flatMap((l) => {
    try {
      return l.startsWith('{') ? [JSON.parse(l) as Record<string, unknown>] : [];
    } catch {
      return [];
    }
  });
}

/** Waits until the shim's STATUS succeeds (the CNI server is ready: restore done, leftovers removed), at most 60 s. */
function cniReady(agent: ReturnType<typeof spawnAgent>, socketPath: string): Promise<boolean> {
  const conf = JSON.stringify({ cniVersion: '1.1.0', name: 'cellium', type: 'cellium-cni', 'socket-path': socketPath });
  return until(async () => agent.proc.exitCode === null && (await runShim({ CNI_COMMAND: 'STATUS' }, conf)).code === 0, 60000, 100);
}

t.test('80 concurrent ADDs, kill -9 mid-burst, restart, CNI GC: nothing leaks, every acknowledged ADD is restored', { skip: agentProcessSkip() }, async (t) => {
  buildShim();
  const began = Date.now();
  const phase = (what: string): void => void t.comment(`${what}: ${((Date.now() - began) / 1000).toFixed(1)} s`);
  const c = new Cleanup(t);
  const { root, dir, socketPath, client, start } = agentProcess(c, 'crash', POOL);
  const stateDir = join(dir, 'state');
  const id = uniq();
  const cids = Array.from({ length: N }, (_, i) => `crash-${id}-${i}`);
  c.teardown(() => {
    for (const cid of cids) if (linkExists(hostIfName(cid, 'eth0'))) ip('link', 'del', hostIfName(cid, 'eth0'));
  });
  // one `ip -batch` each way: 80 `ip netns add` processes cost seconds on a busy machine
  const names = cids.map((_, i) => `clcr-${id}-${i}`);
  c.teardown(() => {
    const left = names.filter((n) => existsSync(`/var/run/netns/${n}`));
    if (left.length) execFileSync('ip', ['-force', '-batch', '-'], { input: left.map((n) => `netns del ${n}\n`).join('') });
  });
  execFileSync('ip', ['-batch', '-'], { input: names.map((n) => `netns add ${n}\n`).join('') });
  const namespaces = names.map((n) => ({ name: n, path: `/var/run/netns/${n}` }));
  const conf = (extra: Record<string, unknown> = {}, cniVersion = '1.0.0') => ({ cniVersion, name: 'cellium', type: 'cellium-cni', 'socket-path': socketPath, ...extra });

  phase('namespaces made');
  let agent = start();
  t.ok(await cniReady(agent, socketPath), 'the agent is ready', { log: agent.log().slice(-3000) });
  phase('agent ready');

  const results: ShimRun[] = [];
  let acked = 0;
  const add = (cid: string, i: number): Promise<void> =>
    cni('ADD', { containerId: cid, netns: namespaces[i]!.path, args: `IgnoreUnknown=1;K8S_POD_NAMESPACE=crash;K8S_POD_NAME=p${i}` }, conf()).then((r) => {
      results[i] = r;
      if (r.code === 0) acked++;
    });
  // a quarter at once and acknowledged, then the rest at once, killed as soon as the agent works on
  // one of them (its host veth exists): counting acknowledgements of one burst raced a fast agent,
  // which had answered all 80 before this process had read a quarter of the shims' exits
  const quarter = N / 4;
  await Promise.all(cids.slice(0, quarter).map(add));
  t.equal(acked, quarter, `the first quarter acknowledged (${acked})`);
  const runs = cids.slice(quarter).map((cid, j) => add(cid, quarter + j));
  t.ok(await until(() => cids.slice(quarter).some((cid) => linkExists(hostIfName(cid, 'eth0'))), 120000, 2), 'the agent works on the rest');
  agent.proc.kill('SIGKILL');
  await agent.exited;
  await Promise.all(runs); // the others fail at once: the agent is gone
  phase('killed');
  const ok = cids.flatMap((cid, i) => (results[i]!.code === 0 ? [i] : []));
  const okSet = new Set(ok);
  t.ok(ok.length >= N / 4 && ok.length < N, `killed mid-burst: ${ok.length} of ${N} ADDs acknowledged`);
  const others = results.filter((r) => r.code !== 0).map((r) => (JSON.parse(r.stdout) as { code: number }).code);
  t.same([...new Set(others)], [11], 'every other ADD failed with "try again later" (the agent did not answer)');

  // what the agent had at the crash, and what it left
  const before = storedEndpoints(stateDir);
  const added = new Map(ok.map((i) => [cids[i]!, JSON.parse(results[i]!.stdout) as AddResult]));
  for (const [cid, res] of added) t.equal(before.get(cid)?.ip, res.ips[0]!.address.split('/')[0], `${cid}: stored with the IP its ADD returned`);
  const orphaned = cids.filter((cid) => linkExists(hostIfName(cid, 'eth0')) && !before.has(cid));
  const unacked = [...before.keys()].filter((cid) => !added.has(cid));
  t.comment(`after the crash: ${orphaned.length} host interfaces without a stored endpoint, ${unacked.length} stored endpoints whose ADD was not acknowledged`);

  agent = start();
  t.ok(await cniReady(agent, socketPath), 'the restarted agent is ready', { log: agent.log().slice(-3000) });
  phase('restarted agent ready');
  const swept = logRecords(agent).filter((r) => r.msg === 'removed a host interface that no endpoint holds');
  // an interrupted ADD whose programs were already attached has its interface deleted by the datapath's restore first
  const guarded = logRecords(agent).filter((r) => r.msg === 'restore: deleted the interface of an endpoint that was not restored (its pod must be re-created)');
  t.same(new Set([...swept.filter((r) => r.deleted === true), ...guarded].map((r) => r.ifName)), new Set(orphaned.map((cid) => hostIfName(cid, 'eth0'))), 'at start, each host interface no endpoint holds was deleted, with a log line');
  t.notOk(orphaned.some((cid) => linkExists(hostIfName(cid, 'eth0'))), 'they are gone before the agent reports ready');
  t.ok(swept.every((r) => String(r.reason).startsWith('at start')), 'by the start sweep');

  const valid = ok.map((i) => ({ containerID: cids[i]!, ifname: 'eth0' }));
  const gc = await cni('GC', { containerId: '' }, conf({ 'cni.dev/valid-attachments': valid }, '1.1.0'));
  t.same([gc.code, gc.stdout], [0, ''], 'CNI GC succeeds');
  phase('GC done');

  // no leaked veth
  t.same(cids.filter((cid, i) => linkExists(hostIfName(cid, 'eth0')) !== okSet.has(i)), [], 'a host veth exists exactly for each acknowledged ADD');
  // every acknowledged ADD restored, same id, IP, identity
  const eps = await client.listEndpoints();
  const now = new Map(eps.map((e) => [e.status['external-identifiers']?.['container-id'] ?? '', { id: e.id, ip: e.status.networking?.addressing?.[0]?.ipv4 ?? '', identity: e.status.identity?.id ?? 0 }]));
  t.same(new Set(now.keys()), new Set(added.keys()), 'the endpoints are exactly the acknowledged ADDs');
  t.same([...added.keys()].map((cid) => now.get(cid)), [...added.keys()].map((cid) => before.get(cid)), 'each with the ID, IP and identity it had before the crash');
  t.ok(await until(async () => (await client.listEndpoints()).every((e) => e.status.state === 'ready'), 30000), 'all ready');
  for (const cid of added.keys()) {
    const p = endpointPrograms(Number(readFileSync(`/sys/class/net/${hostIfName(cid, 'eth0')}/ifindex`, 'utf8')));
    if (p.from_container.legacy === undefined || p.to_container.legacy === undefined) t.fail(`${cid}: programs attached at both hooks`);
  }

  // no stale map entry: read the pinned maps
  const want = new Map([...added.keys()].map((cid) => [before.get(cid)!.ip, before.get(cid)!]));
  const lxc = openLxcMap(root);
  const ipc = openIPCacheMap(root);
  c.teardown(() => [lxc, ipc].forEach((m) => m.close()));
  t.same(new Map(lxc.entries().map(([k, v]) => [k, v.endpointId])), new Map([...want].map(([k, v]) => [k, v.id])), 'cellium_lxc holds exactly the acknowledged endpoints');
  const pool = parseCidr(POOL);
  const inPool = ipc.entries().filter(([cidr]) => !cidr.includes(':') && cidrContains(pool, parseCidr(cidr)));
  t.same(new Map(inPool.map(([k, v]) => [k, v.identity])), new Map([...want].map(([k, v]) => [`${k}/32`, v.identity])), 'cellium_ipcache holds exactly their IPs in the pool, with their identities');
  const policyMaps = readdirSync(root).map(endpointOfPolicyMap).filter((x): x is number => x !== undefined);
  t.same(policyMaps.sort((a, b) => a - b), [...want.values()].map((e) => e.id).sort((a, b) => a - b), 'a policy map for each of them and no other');
  t.same(pinnedEndpoints(root).filter((x) => ![...want.values()].some((e) => e.id === x)), [], 'no link pin of another endpoint');

  // no leaked IP
  const status = await client.status();
  t.same(status.ipam?.allocations, Object.fromEntries([...added.keys()].map((cid) => [before.get(cid)!.ip, `crash/p${cids.indexOf(cid)}`])), 'IPAM holds exactly their IPs, each for its pod');
  t.same(readdirSync(join(stateDir, JOURNAL_DIR)).sort(), [...added.keys()].map((cid) => `${hostIfName(cid, 'eth0')}.json`).sort(), 'the journal names exactly their interfaces');

  agent.proc.kill('SIGTERM');
  await agent.exited;
  phase('checked');
});
