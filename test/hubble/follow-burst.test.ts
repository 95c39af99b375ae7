// A large burst to the real hubble CLI (needs scripts/hubble.sh's build, no root): an in-process
// Hubble server (the observer and GetFlows of the agent) takes 30,000 flows in monitor-poll-sized
// reads while `hubble observe --follow -o json` reads them; every flow arrives once, in order, none
// lost, and `--last` reads the ring back in order too. Then a client that stops reading (its stdout
// not read) while 60,000 flows pass a ring of 1,023: the server waits instead of buffering, and the
// client, once it reads again, is told how many the ring overwrote: received + lost = sent. The
// grpc-js patch that batches a call's queued messages into one write (patches/) must be applied.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { silentLogger } from '../../src/hive/index.js';
import type { EnrichedEvent, MonitorEvent } from '../../src/monitor/index.js';
import { HubbleObserver, HubbleServer } from '../../src/cells/hubble/index.js';
import { needs } from '../needs.js';
import { until } from '../until.js';

const ev = (i: number): MonitorEvent => ({
  type: 'drop', reason: 'policy', direction: 'ingress', endpointId: 7, protocol: 6, dport: 81, srcIdentity: 1000, dstIdentity: 2000, ifIndex: 9,
  src: `10.0.${(i >> 16) & 0xff}.1`, dst: '10.0.0.2', icmpType: 0, sport: i & 0xffff, tcpFlags: 2, ctStatus: 'new', match: 'none', action: 'deny', len: 60,
});
const client = { ID: 3, identity: 1000, labels: ['k8s:app=client'], pod_name: 'default/client', namespace: 'default' };
const server = { ID: 7, identity: 2000, labels: ['k8s:app=server'], pod_name: 'default/server', namespace: 'default' };
/** Flow i's number, read back from its addresses (third octet, source port). */
const seqOf = (flow: { IP: { source: string }; l4: { TCP: { source_port?: number } } }): number =>
  (Number(flow.IP.source.split('.')[2]) << 16) + (flow.l4.TCP.source_port ?? 0);

/** Feeds flows from..to-1 as the monitor does: a read of `batch` at a time, one event-loop turn each. */
async function feed(o: HubbleObserver, from: number, to: number, batch = 2000): Promise<void> {
  for (let i = from; i < to; i += batch) {
    const time = new Date().toISOString();
    for (let j = i; j < Math.min(to, i + batch); j++) o.onRecord({ kind: 'event', event: { event: ev(j), time, source: client, destination: server } satisfies EnrichedEvent });
    await new Promise((r) => setImmediate(r));
  }
}

/** A `hubble observe` process: its JSON lines parsed as they come (or held back while paused). */
function observe(bin: string, socket: string, args: string[]) {
  const cli = spawn(bin, ['observe', '--server', `unix://${socket}`, '-o', 'json', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const seqs: number[] = [];
  let lost = 0;
  let tail = '';
  let err = '';
  cli.stderr.on('data', (b: Buffer) => (err += b.toString()));
  cli.stdout.on('data', (b: Buffer) => {
    const lines = (tail + b.toString()).split('\n');
    tail = lines.pop()!;
    for (const l of lines) {
      const m = JSON.parse(l) as { flow?: Parameters<typeof seqOf>[0]; lost_events?: { num_events_lost?: string | number; source?: string } };
      if (m.flow) seqs.push(seqOf(m.flow));
      else if (m.lost_events) lost += Number(m.lost_events.num_events_lost ?? 0);
    }
  });
  const exited = new Promise<void>((r) => cli.on('close', () => r()));
  return { cli, seqs, lost: () => lost, stderr: () => err, exited };
}

async function start(t: Test, capacity: number): Promise<{ observer: HubbleObserver; socket: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'cellium-hubble-burst-'));
  const socket = join(dir, 'hubble.sock');
  const observer = new HubbleObserver(capacity, 'node-burst');
  const srv = new HubbleServer(observer, socket, 'test', silentLogger());
  await srv.start();
  t.teardown(async () => {
    observer.stop();
    await srv.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  return { observer, socket };
}

/** Waits until `f` follows: a probe flow a turn, numbered past the bursts so told apart; returns how many it got. */
async function following(t: Test, observer: HubbleObserver, f: ReturnType<typeof observe>): Promise<number> {
  let probe = 1 << 20;
  await until('hubble observe to follow', async () => {
    await feed(observer, probe, ++probe);
    await new Promise((r) => setTimeout(r, 50));
    return f.seqs.length > 0;
  }, 20000, 0).catch((e: Error) => t.fail(`${e.message}: ${f.stderr()}`));
  return f.seqs.length;
}

const hubbleBin = (): string => spawnSync('bash', [join(import.meta.dirname, '..', '..', 'scripts', 'hubble.sh'), 'path'], { encoding: 'utf8' }).stdout.trim();

t.test("grpc-js batches a call's queued messages (patches/@grpc+grpc-js is applied)", async (t) => {
  const require = createRequire(import.meta.url);
  const calls = require('@grpc/grpc-js/build/src/server-call.js') as { ServerWritableStreamImpl: { prototype: object } };
  t.ok('_writev' in calls.ServerWritableStreamImpl.prototype, 'server streams write queued messages at once: if not, run npx patch-package');
});

t.test('a burst of 30,000 flows reaches hubble observe --follow whole and in order', { skip: needs('hubble') }, async (t) => {
  const N = 30_000;
  const { observer, socket } = await start(t, 32767);
  const f = observe(hubbleBin(), socket, ['--follow']);
  t.teardown(() => void f.cli.kill());
  const probes = await following(t, observer, f);
  await feed(observer, 0, N);
  await until('every flow', () => f.seqs.length - probes >= N || f.lost() > 0, 60000, 20).catch(() => undefined);
  const burst = f.seqs.slice(probes).filter((s) => s < 1 << 20);
  t.equal(f.lost(), 0, 'no lost_events');
  t.equal(burst.length, N, 'every flow arrived');
  t.equal(new Set(burst).size, N, 'none twice');
  t.ok(burst.every((s, i) => s === i), 'in the order they came');
  f.cli.kill();

  const held = observer.ring.size;
  const last = observe(hubbleBin(), socket, ['--last', String(held)]);
  await last.exited;
  t.equal(last.seqs.length, held, `--last ${held}: every flow the ring holds (the probes and the burst)`);
  t.same(last.seqs.slice(-N).map((s, i) => s - i).filter((d) => d !== 0), [], 'read back in order');
});

t.test('a client that stops reading costs the agent no more than its queue: it lags and learns what it lost', { skip: needs('hubble') }, async (t) => {
  const N = 60_000;
  const { observer, socket } = await start(t, 1023);
  const f = observe(hubbleBin(), socket, ['--follow']);
  t.teardown(() => void f.cli.kill());
  const probes = await following(t, observer, f);
  f.cli.stdout.pause();
  await feed(observer, 0, N);
  f.cli.stdout.resume();
  await until('the client to catch up', () => f.seqs.length - probes + f.lost() >= N, 60000, 50).catch(() => undefined);
  const got = f.seqs.slice(probes).filter((s) => s < 1 << 20);
  // had the server queued every flow for the stalled client, none would be lost
  t.ok(f.lost() > 0, `the ring overwrote flows the stalled client had not read (${f.lost()} lost): the server waited instead of buffering them`);
  t.equal(got.length + f.lost(), N, 'received + lost = sent');
  t.ok(observer.lostEvents.hubbleRingBuffer >= f.lost(), 'the agent counted them (hubble_lost_events_total{source="HUBBLE_RING_BUFFER"})');
  t.equal(new Set(got).size, got.length, 'none twice');
  t.ok(got.every((s, i) => i === 0 || s > got[i - 1]!), 'what arrived is in order');
});
