/**
 * Services into the LB maps: 10,000 services × 10 backends upserted into the ServiceManager and
 * reconciled (LBOps, Cilium's write order) until every frontend is `done`, into the kernel maps
 * (a temporary BPF root; as root with BPF) and into the in-memory maps. Objects are services plus
 * backends (110,000); the target is Cilium's reconciler figure of ~50,000 objects per second (per
 * core: the rate is per CPU second of this process). RSS is the process's after the run.
 */
import { rmSync } from 'node:fs';
import { bpfAvailable } from '../src/bpf/index.js';
import { ensureBpffs } from '../src/bpf/bpffs.js';
import { memoryLBMaps } from '../src/datapath/memory/lb-maps.js';
import type { LBMapSet } from '../src/datapath/lb-maps.js';
import { openLBMaps } from '../src/maps/lb/index.js';
import { LBOps, LBServiceManager, type ServiceUpsert } from '../src/cells/loadbalancer/index.js';
import { Reconciler } from '../src/lib/reconciler/index.js';
import { printTable, ratio } from './lib/report.js';

const SERVICES = 10_000;
const BACKENDS = 10;
const MAP_MAX = 262_144;
const CILIUM_OBJECTS_PER_SEC = 50_000;

function upsert(i: number): ServiceUpsert {
  const vip = `10.${96 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}`;
  return {
    service: { key: `bench/svc-${i}`, name: `svc-${i}`, namespace: 'bench', source: 'k8s', sessionAffinity: false, sessionAffinityTimeoutSec: 0, extTrafficPolicy: 'Cluster', intTrafficPolicy: 'Cluster', sourceRanges: [] },
    frontends: [{ address: { ip: vip, port: 80, protocol: 'tcp', scope: 'external' }, type: 'ClusterIP' }],
    backends: Array.from({ length: BACKENDS }, (_, b) => {
      const n = i * BACKENDS + b;
      return { address: { ip: `10.${200 + (n >> 16)}.${(n >> 8) & 255}.${n & 255}`, port: 8080, protocol: 'tcp' as const, scope: 'external' as const }, state: 'active' as const, weight: 100 };
    }),
  };
}

async function run(maps: LBMapSet, services = SERVICES): Promise<{ objectsPerSec: number; frontendsPerSec: number; seconds: number; done: number }> {
  const mgr = new LBServiceManager(65535);
  const r = new Reconciler(mgr.frontends, new LBOps(maps, { algorithm: 'random', maglevTableSize: 16381, maxBackends: MAP_MAX }), { batchSize: 1024 });
  r.start();
  const t0 = process.cpuUsage();
  const w0 = performance.now();
  for (let i = 0; i < services; i++) mgr.upsert(upsert(i));
  await r.flush();
  const d = process.cpuUsage(t0);
  const cpu = (d.user + d.system) / 1e6;
  const done = mgr.status().done;
  await r.stop();
  return { objectsPerSec: (services * (1 + BACKENDS)) / cpu, frontendsPerSec: services / cpu, seconds: (performance.now() - w0) / 1000, done };
}

async function main(): Promise<void> {
  const rows: (string | number)[][] = [];
  await run(memoryLBMaps(), 2000); // warm-up (JIT), not reported
  const mem = await run(memoryLBMaps());
  rows.push(['memory maps', mem.done, mem.objectsPerSec, mem.frontendsPerSec, mem.seconds, ratio(mem.objectsPerSec, CILIUM_OBJECTS_PER_SEC, '>= 1x')]);
  const avail = bpfAvailable();
  if (process.getuid?.() === 0 && avail.ok) {
    const root = `/sys/fs/bpf/cellium-bench-lb-${process.pid}`;
    ensureBpffs(root);
    const maps = openLBMaps(root, MAP_MAX, 16381);
    try {
      const k = await run(maps);
      rows.push(['kernel maps', k.done, k.objectsPerSec, k.frontendsPerSec, k.seconds, ratio(k.objectsPerSec, CILIUM_OBJECTS_PER_SEC, '>= 1x')]);
    } finally {
      maps.close();
      rmSync(root, { recursive: true, force: true });
    }
  } else rows.push(['kernel maps', 'skipped', 0, 0, 0, process.getuid?.() !== 0 ? 'needs root' : `BPF unavailable: ${avail.reason ?? ''}`]);
  printTable(`LB reconciler: ${SERVICES.toLocaleString('en-US')} services x ${BACKENDS} backends until every frontend is done (objects = services + backends, per CPU second)`, ['target', 'frontends done', 'objects/s', 'frontends/s', 'wall s', 'vs Cilium 50k objects/s'], rows);
  console.log(`RSS after: ${Math.round(process.memoryUsage().rss / 1048576)} MiB`);
}

await main();
