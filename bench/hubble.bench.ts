/**
 * Hubble serving throughput: flows per second the hubble cell's path turns datapath records into
 * Hubble flows and serves to one real `hubble observe --follow` client (scripts/hubble.sh) over
 * its unix socket: decoding (decodeMonitorEvent, as the monitor does), the flow (toFlow, with
 * both sides described as the monitor's Enricher describes a local endpoint), the ring, the
 * observer's fan-out, protobuf encoding and the gRPC stream, until the client printed them all.
 * Baseline, same run: decoding the same records alone (raw ring-buffer reading without a client).
 * Goal: >= 0.8x. The records are crafted 64-byte struct monitor_event (bpf/lib/common.h) fed in
 * batches as the monitor's 50 ms polls hand them over, so the rate is not bounded by how fast this
 * machine can make packets; events lost: flows the client never received (reported as lost_events).
 * Needs the hubble CLI (skips with one line otherwise).
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '../src/hive/index.js';
import { decodeMonitorEvent, MONITOR_EVENT_SIZE, type EnrichedEvent, type FlowEndpoint } from '../src/monitor/index.js';
import { credentials } from '@grpc/grpc-js';
import { HubbleObserver, HubbleServer } from '../src/cells/hubble/index.js';
import { observerpb } from '../src/hubble/index.js';
import { printTable, ratio } from './lib/report.js';

const N = 100_000;
const BATCH = 2000;

function records(): Buffer[] {
  return Array.from({ length: N }, (_, i) => {
    const b = Buffer.alloc(MONITOR_EVENT_SIZE);
    b[0] = i % 2 ? 1 : 3; // drop, policy verdict
    b[1] = 1;
    b[3] = 6;
    b.writeUInt16LE(42, 4);
    b.writeUInt16BE(81, 6);
    b.writeUInt32LE(256, 8);
    b.writeUInt32LE(257, 12);
    b[20] = 4;
    b.writeUInt32BE(0x0af40902, 24);
    b.writeUInt32BE(0x0af40903, 40);
    b.writeUInt16BE(10000 + (i % 50000), 56);
    b[58] = 0x02;
    return b;
  });
}

const client: FlowEndpoint = { ID: 1470, identity: 256, labels: ['k8s:app=hclient', 'k8s:io.kubernetes.pod.namespace=default'], pod_name: 'default/hclient', namespace: 'default' };
const server: FlowEndpoint = { ID: 3794, identity: 257, labels: ['k8s:app=hserver', 'k8s:io.kubernetes.pod.namespace=default'], pod_name: 'default/hserver', namespace: 'default' };

function baseline(recs: readonly Buffer[]): number {
  const start = process.hrtime.bigint();
  let n = 0;
  for (const r of recs) if (decodeMonitorEvent(r)) n++;
  const s = Number(process.hrtime.bigint() - start) / 1e9;
  if (n !== N) throw new Error(`decoded ${n} of ${N}`);
  return N / s;
}

/** A client: `hubble observe --follow -o json` (counting its lines), or a Node gRPC client that only decodes. */
interface Follower {
  flows(): number;
  lost(): number;
  close(): void;
}

function hubbleFollower(bin: string, socket: string): Follower {
  const cli = spawn(bin, ['observe', '--server', `unix://${socket}`, '--follow', '-o', 'json'], { stdio: ['ignore', 'pipe', 'ignore'] });
  let lines = 0;
  let lost = 0;
  let tail = '';
  cli.stdout.on('data', (b: Buffer) => {
    const parts = (tail + b.toString()).split('\n');
    tail = parts.pop()!;
    for (const l of parts) {
      if (l.includes('"lost_events"')) lost += Number(/"num_events_lost":\s*"?(\d+)/.exec(l)?.[1] ?? 0);
      else if (l.includes('"flow"')) lines++;
    }
  });
  return { flows: () => lines, lost: () => lost, close: () => void cli.kill() };
}

function nodeFollower(socket: string): Follower {
  const client = new observerpb.ObserverClient(`unix:${socket}`, credentials.createInsecure());
  const call = client.getFlows({ ...observerpb.GetFlowsRequest.decode(new Uint8Array()), follow: true });
  let flows = 0;
  let lost = 0;
  call.on('data', (r: observerpb.GetFlowsResponse) => {
    if (r.flow) flows++;
    if (r.lostEvents) lost += r.lostEvents.numEventsLost;
  });
  call.on('error', () => undefined);
  return { flows: () => flows, lost: () => lost, close: () => { call.cancel(); client.close(); } };
}

async function served(follower: (socket: string) => Follower, recs: readonly Buffer[]): Promise<{ rate: number; received: number; lost: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'cellium-hubble-bench-'));
  const observer = new HubbleObserver(131071, 'bench');
  const srv = new HubbleServer(observer, join(dir, 'hubble.sock'), 'bench', silentLogger());
  await srv.start();
  const f = follower(join(dir, 'hubble.sock'));
  const feed = (r: Buffer): void => observer.onRecord({ kind: 'event', event: { event: decodeMonitorEvent(r)!, time: new Date().toISOString(), source: client, destination: server } satisfies EnrichedEvent });
  try {
    // until the client follows: a probe a poll
    for (let i = 0; f.flows() === 0; i++) {
      if (i > 200) throw new Error('hubble observe --follow did not connect within 10 s');
      feed(recs[0]!);
      await new Promise((r) => setTimeout(r, 50));
    }
    await new Promise((r) => setTimeout(r, 200));
    const before = f.flows();
    const start = process.hrtime.bigint();
    for (let i = 0; i < recs.length; i += BATCH) {
      const time = new Date().toISOString();
      for (const r of recs.slice(i, i + BATCH)) observer.onRecord({ kind: 'event', event: { event: decodeMonitorEvent(r)!, time, source: client, destination: server } });
      await new Promise((r) => setImmediate(r));
    }
    // until the client printed every flow, or was told they were lost, or 60 s
    for (let i = 0; f.flows() - before + f.lost() < N && i < 6000; i++) await new Promise((r) => setTimeout(r, 10));
    const s = Number(process.hrtime.bigint() - start) / 1e9;
    const received = f.flows() - before;
    return { rate: received / s, received, lost: N - received };
  } finally {
    f.close();
    observer.stop();
    await srv.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const r = spawnSync('bash', [join(import.meta.dirname, '..', '..', 'scripts', 'hubble.sh'), 'path'], { encoding: 'utf8' });
  if (r.status !== 0) {
    console.log('hubble bench: skipped: the hubble CLI is not built (bash scripts/hubble.sh build)');
    return;
  }
  const recs = records();
  baseline(recs); // warm-up
  const base = baseline(recs);
  const bin = r.stdout.trim();
  const ours = await served((socket) => hubbleFollower(bin, socket), recs);
  const node = await served(nodeFollower, recs);
  printTable(`Hubble: ${N} flows to one hubble observe --follow -o json vs decoding them alone`, ['path', 'flows/s', 'vs baseline', 'received', 'lost'], [
    ['decode only (raw ring reading, baseline)', base, '1x', N, 0],
    ['decode + flow + ring + gRPC to hubble observe -o json', ours.rate, ratio(ours.rate, base, '>= 0.8x'), ours.received, ours.lost],
    ['decode + flow + ring + gRPC to a Node client (decode only)', node.rate, ratio(node.rate, base, '>= 0.8x'), node.received, node.lost],
  ]);
}

await main();
