/**
 * Endpoint benchmark: EndpointAPIManager.createEndpoint in-process with the real statedir,
 * identity, IPAM, policy, datapath (memory) and endpoint cells — sync build (returns after the
 * first regeneration: identity, policy, maps, program, state directory swap) and async build —
 * one call at a time (p50/p99 per call) and 1000 at once (wall time), plus deletion. Baselines
 * measured in the same run: a bare Map insert, the creator alone (validation), and the state
 * directory write alone (mkdir, two files, renames) on the same filesystem.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Hive, silentLogger } from '../src/hive/index.js';
import { statedirCell } from '../src/cells/statedir/index.js';
import { identityCell } from '../src/cells/identity/index.js';
import { ipamCell } from '../src/cells/ipam/index.js';
import { policyCell } from '../src/cells/policy/index.js';
import { datapathCell } from '../src/cells/datapath/index.js';
import { memoryDatapathCell } from '../src/cells/datapath-memory/index.js';
import {
  endpointCell, datapathConfigOf, DefaultEndpointCreator, Endpoint, EndpointAPIManagerToken, EndpointStateStore,
  type EndpointChangeRequest,
} from '../src/cells/endpoint/index.js';
import { printTable, ratio, sample, stats, time } from './lib/report.js';

const N = 1000;

function request(n: number, sync: boolean): EndpointChangeRequest {
  const host = n + 1; // .0.1 is the pool's gateway address, which the agent refuses for an endpoint
  return {
    'container-id': `bench-${n}`,
    'container-interface-name': 'eth0',
    'interface-name': `lxc${n}`,
    'interface-index': 100 + n,
    mac: '02:00:00:00:00:01',
    'host-mac': '02:00:00:00:00:02',
    addressing: { ipv4: `10.${200 + (host >> 16)}.${(host >> 8) & 255}.${host & 255}` },
    'k8s-pod-name': `pod-${n}`,
    'k8s-namespace': 'bench',
    labels: [`k8s:app=app-${n % 50}`],
    'sync-build-endpoint': sync,
  };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'cellium-bench-ep-'));
  const hive = new Hive([statedirCell, identityCell, ipamCell, policyCell, datapathCell, memoryDatapathCell, endpointCell], { logger: silentLogger() });
  hive.configure({ values: { 'state-dir': join(dir, 'state'), 'datapath-mode': 'memory', 'endpoint-regen-interval': '0', 'endpoint-gc-interval': '0' } });
  await hive.start();
  const api = hive.get(EndpointAPIManagerToken);
  const ctx = {};
  let seq = 1;
  const clear = async (ids: number[]): Promise<void> => {
    await Promise.all(ids.splice(0).map((id) => api.deleteEndpoint(ctx, String(id))));
  };
  try {
    const ids: number[] = [];
    const createSync = stats(await sample(N, async () => {
      ids.push((await api.createEndpoint(ctx, request(seq++, true))).id);
    }, 20));
    const del = stats(await sample(ids.length - 20, async () => {
      await api.deleteEndpoint(ctx, String(ids.pop()));
    }, 0));
    await clear(ids);
    const createAsync = stats(await sample(N, async () => {
      ids.push((await api.createEndpoint(ctx, request(seq++, false))).id);
    }, 20));
    await new Promise((r) => setTimeout(r, 200));
    await clear(ids);
    const concurrentMs = await time(async () => {
      const eps = await Promise.all(Array.from({ length: N }, () => api.createEndpoint(ctx, request(seq++, true))));
      ids.push(...eps.map((e) => e.id));
    });
    await clear(ids);

    const map = new Map<number, object>();
    const mapInsert = stats(await sample(N, (i) => map.set(i, { id: i })));
    const creator = new DefaultEndpointCreator();
    const create = stats(await sample(N, (i) => creator.newEndpointFromChangeModel(ctx, request(100_000 + i, true))));
    const store = new EndpointStateStore(join(dir, 'store-only'));
    const storeWrite = stats(await sample(N, async (i) => {
      const ep = new Endpoint({ ifName: `lxc${i}`, ifIndex: 1, mac: '', hostMac: '', ipv4: '10.0.0.1' }, ['k8s:app=x']);
      ep.start(i + 1, { regenerate: async () => undefined, controllers: () => [] });
      await store.prepare(ep, datapathConfigOf(ep));
      await store.commit(ep.id);
    }, 0));

    printTable(`endpoint: createEndpoint in-process, memory datapath, state dir in ${tmpdir()} (${N} calls each)`, ['what', 'p50 ms', 'p99 ms', 'mean ms', 'vs Map insert (p50)'], [
      ['createEndpoint, sync-build (first regeneration awaited)', createSync.p50Ms, createSync.p99Ms, createSync.meanMs, ratio(createSync.p50Ms, mapInsert.p50Ms)],
      ['createEndpoint, async build (returns once added)', createAsync.p50Ms, createAsync.p99Ms, createAsync.meanMs, ratio(createAsync.p50Ms, mapInsert.p50Ms)],
      ['deleteEndpoint', del.p50Ms, del.p99Ms, del.meanMs, ratio(del.p50Ms, mapInsert.p50Ms)],
      ['component: creator alone (ajv + semantic checks)', create.p50Ms, create.p99Ms, create.meanMs, ratio(create.p50Ms, mapInsert.p50Ms)],
      ['component: state dir <id>_next write + swap (new endpoint)', storeWrite.p50Ms, storeWrite.p99Ms, storeWrite.meanMs, ratio(storeWrite.p50Ms, mapInsert.p50Ms)],
      ['baseline: bare Map insert', mapInsert.p50Ms, mapInsert.p99Ms, mapInsert.meanMs, '1.00x'],
    ]);
    printTable(`endpoint: ${N} createEndpoint calls at once (sync-build)`, ['what', 'total ms', 'endpoints/s'], [
      [`${N} concurrent creations`, concurrentMs, (N / concurrentMs) * 1000],
      [`${N} sequential creations (sum of sync-build means)`, createSync.meanMs * N, 1000 / createSync.meanMs],
    ]);
  } finally {
    await hive.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
