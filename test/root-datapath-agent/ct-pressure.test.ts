// Privileged, BPF datapath (issue 22 point 5, conntrack pressure is visible): the agent in this
// process with 1,024-entry conntrack maps; a client pod opens 3,000 real TCP connections to a
// server pod (each one a new entry on both sides: about 6,000 entries through a 1,024-entry LRU
// table). The kernel evicts entries without telling anyone and every connection still works (the
// table never fails open or closed for new connections); the agent counts the evictions
// (cellium_datapath_conntrack_evictions_total), its GC metrics show the table as it is (a run comes
// early once the table may have filled, not 5 minutes later), the `conntrack` health node is
// degraded naming the flag to raise, and `cellium status` shows it. A flush from the CLI is counted
// as deletes, not evictions: after it the node is Ok again. Connections to a service count their
// service entry as created too (else the entries it adds would hide evictions).
import t from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { HealthNode } from '../../src/api/models.js';
import { MetricsServerToken } from '../../src/cells/api-metrics/index.js';
import { CtMaps, readDropCounters } from '../../src/maps/index.js';
import { SMALL_CT } from './ct-fixtures.js';
import { Cleanup, allocatePod, bpfRoot, cli, endpointRequest, skipReason, startBpfAgent, until, type Pod } from './fixtures.js';

const POOL = '10.139.7.0/24';
const FLOOD = join(import.meta.dirname, 'ct-flood.mjs');
const CONNECTIONS = 3000;

/** Runs ct-flood.mjs in the pod's namespace; resolves with its first output line (killed at cleanup). */
function flood(c: Cleanup, pod: Pod, args: readonly string[], timeoutMs: number): Promise<string> {
  const proc: ChildProcess = spawn('ip', ['netns', 'exec', pod.ns, process.execPath, FLOOD, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  c.teardown(() => {
    if (proc.exitCode === null && proc.pid) process.kill(proc.pid);
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`ct-flood ${args[0]} in ${pod.name}: no answer in ${timeoutMs} ms`)), timeoutMs);
    createInterface({ input: proc.stdout! }).once('line', (line) => {
      clearTimeout(timer);
      resolve(line);
    });
    proc.once('error', reject);
  });
}

function node(tree: HealthNode | undefined, name: string): HealthNode | undefined {
  if (!tree) return undefined;
  if (tree.name === name) return tree;
  for (const c of tree.children ?? []) {
    const hit = node(c, name);
    if (hit) return hit;
  }
  return undefined;
}

function occupancy(root: string): number {
  const ct = CtMaps.openPinned(root);
  try {
    return [...ct.maps.cellium_ct4_global.map.keys()].length;
  } finally {
    ct.close();
  }
}

t.test('a flooded 1,024-entry conntrack table: evictions counted, GC metrics current, health degraded, status line', { skip: skipReason() }, async (t) => {
  const c = new Cleanup(t);
  const root = bpfRoot(c);
  const agent = await startBpfAgent(c, root, POOL, { 'bpf-ct-global-tcp-max': 1024, 'bpf-ct-global-any-max': 1024 });
  const client = await allocatePod(c, agent.client, 'client');
  const server = await allocatePod(c, agent.client, 'server');
  await agent.client.createEndpoint(0, endpointRequest(client, ['k8s:app=client']));
  await agent.client.createEndpoint(0, endpointRequest(server, ['k8s:app=server']));
  const health = async (): Promise<HealthNode | undefined> => node((await agent.client.status())['cellium-health'], 'conntrack');
  t.ok(await until(async () => (await health())?.level === 'ok', 10000, 200), 'after the first run the conntrack node is ok', { node: await health() });

  t.equal(await flood(c, server, ['serve', server.ip, '8080'], 10000), 'ready');
  const done = await flood(c, client, ['flood', server.ip, '8080', client.ip, String(CONNECTIONS), '32'], 120000);
  t.equal(done, `done ${CONNECTIONS} 0`, 'every connection through the full table was made');

  t.ok(await until(async () => (await health())?.level === 'degraded', 45000, 500), 'the conntrack node is degraded', { node: await health() });
  const scrape = await agent.h.get(MetricsServerToken).scrape();
  const value = (re: RegExp): number => Number(re.exec(scrape)?.[1] ?? NaN);
  const evicted = value(/^cellium_datapath_conntrack_evictions_total\{family="ipv4",protocol="TCP"\} (\d+)$/m);
  // about 2 entries per connection, at most 1,024 kept: the rest went, to the kernel's LRU
  t.ok(evicted >= CONNECTIONS && evicted <= 2 * CONNECTIONS, `evictions counted (${evicted})`, { metrics: scrape.split('\n').filter((l) => l.includes('conntrack') || l.includes('pressure')) });
  const alive = value(/^cellium_datapath_conntrack_gc_entries\{family="ipv4",protocol="TCP",status="alive"\} (\d+)$/m);
  // closing entries (10 s) of the flood's first connections may have expired and been collected by then
  t.ok(alive >= 512 && alive <= 1024, `the GC metric shows the full table (${alive} alive), not the start's`, { actual: occupancy(root) });
  t.ok(Math.abs(value(/^cellium_bpf_map_pressure\{map_name="cellium_ct4_global"\} ([\d.]+)$/m) - alive / 1024) < 0.001, 'the map pressure of cellium_ct4_global: the same share');
  t.equal(readDropCounters(root)['ct-insert-failed']?.packets ?? 0, 0, 'no insert failed: the LRU evicts instead');

  const msg = (await health())?.message ?? '';
  t.match(msg, /^conntrack table under pressure: cellium_ct4_global \d+\/1024 \(\d+%\), \d+ evicted since the last run, \d+ in all: .*raise --bpf-ct-global-tcp-max$/, 'the health line names the map and the flag');
  const status = await cli(agent.socketPath, 'status');
  t.match(status.out, /Cellium:\s+Warning\s.*degraded: .*conntrack \(conntrack table under pressure/, 'cellium status: Warning naming the conntrack node');
  t.match(status.out, /conntrack: DEGRADED - conntrack table under pressure: cellium_ct4_global/, 'and its line in the health tree');

  // an operator's flush is counted as deletes: the next run finds no eviction and the node is ok
  const flushed = await cli(agent.socketPath, 'bpf', 'ct', 'flush', 'global', '--bpf-root', root);
  t.equal(flushed.code, 0, flushed.err);
  t.ok(await until(async () => (await health())?.level === 'ok', 30000, 500), 'ok again after the flush (not taken for evictions)', { node: await health() });
  t.match((await health())?.message, /^conntrack: cellium_ct4_global \d+\/1024, .*; \d+ evicted in all$/);
  const after = await agent.h.get(MetricsServerToken).scrape();
  t.equal(Number(/^cellium_datapath_conntrack_evictions_total\{family="ipv4",protocol="TCP"\} (\d+)$/m.exec(after)?.[1]), evicted, 'the flush added no eviction');
});

t.test('every entry a connection to a service adds is counted as created, the service entry too', { skip: skipReason() }, async (t) => {
  const c = new Cleanup(t);
  const root = bpfRoot(c);
  const agent = await startBpfAgent(c, root, '10.139.9.0/24', SMALL_CT);
  const client = await allocatePod(c, agent.client, 'svc-client');
  const server = await allocatePod(c, agent.client, 'svc-server');
  await agent.client.createEndpoint(0, endpointRequest(client, ['k8s:app=client']));
  await agent.client.createEndpoint(0, endpointRequest(server, ['k8s:app=server']));
  await agent.client.putService(1, { 'frontend-address': { ip: '10.96.139.9', port: 80, protocol: 'tcp' }, 'backend-addresses': [{ ip: server.ip, port: 8080 }] });
  t.equal(await flood(c, server, ['serve', server.ip, '8080'], 10000), 'ready');
  const created = (): number => {
    const ct = CtMaps.openPinned(root);
    try {
      return ct.counts().cellium_ct4_global.created;
    } finally {
      ct.close();
    }
  };
  const before = created();
  const entriesBefore = occupancy(root);
  t.equal(await flood(c, client, ['flood', '10.96.139.9', '80', client.ip, '5', '1'], 30000), 'done 5 0', 'five connections through the service');
  t.equal(created() - before, 15, 'three new entries each: the service entry, the client\'s and the server\'s');
  t.equal(occupancy(root) - entriesBefore, 15, 'as many as the map gained');
});
