import t from 'tap';
import { Reconciler } from '../../src/lib/reconciler/index.js';
import { LB_MAP_NAMES, serviceKeyText, type LBMap, type LBMapSet } from '../../src/datapath/lb-maps.js';
import { MemoryLBMap, memoryLBMaps } from '../../src/datapath/memory/lb-maps.js';
import { LBServiceManager, lazyLBMaps } from '../../src/cells/loadbalancer/index.js';
import { LBOps } from '../../src/cells/loadbalancer/lb-ops.js';
import { be, upsert } from './helpers.js';

/** LB maps that record every operation (`set cellium_lb4_services 10.96.0.10:80/6 slot 1 scope 0`) and can be made to fail. */
function recordingMaps() {
  const log: string[] = [];
  const failing = new Set<string>();
  const inner = memoryLBMaps();
  const text = (name: string, k: unknown): string => (name.includes('services') ? serviceKeyText(k as never) : typeof k === 'object' ? JSON.stringify(k) : String(k));
  const wrap = <K, V>(m: LBMap<K, V>): LBMap<K, V> => ({
    name: m.name,
    get: (k) => m.get(k),
    entries: () => m.entries(),
    set: (es) => {
      if (failing.has(m.name)) throw new Error(`E2BIG writing ${m.name}`);
      for (const [k] of es) log.push(`set ${m.name} ${text(m.name, k)}`);
      m.set(es);
    },
    delete: (ks) => {
      for (const k of ks) log.push(`del ${m.name} ${text(m.name, k)}`);
      m.delete(ks);
    },
  });
  const maps = Object.fromEntries(Object.entries(inner).map(([k, m]) => [k, wrap(m as LBMap<unknown, unknown>)])) as unknown as LBMapSet;
  return { maps, inner, log, failing };
}

const short = (l: string): string => l.replace('cellium_lb4_', '').replace('cellium_lb_', '').replace(' scope 0', '');

t.test("Cilium's write order: backends, slots 1..N, maglev, revNAT, master, then slots above the count; deletion reversed", async (t) => {
  const { maps, log } = recordingMaps();
  const ops = new LBOps(maps, { algorithm: 'maglev', maglevTableSize: 251, maxBackends: 100 });
  const mgr = new LBServiceManager();
  mgr.upsert(upsert('default/web', '10.96.0.10', 80, [be('10.0.1.1', 8080), be('10.0.1.2', 8080), be('10.0.1.3', 8080, 'terminating')]));
  const fe = mgr.frontends.get('10.96.0.10:80/TCP')!.value;
  t.same((await ops.update([['10.96.0.10:80/TCP', fe]])).size, 0);
  t.same(log.map(short), [
    'set backends 1', 'set backends 2', 'set backends 3',
    'set services 10.96.0.10:80/6 slot 1', 'set services 10.96.0.10:80/6 slot 2', 'set services 10.96.0.10:80/6 slot 3',
    'set maglev 1',
    'set reverse_nat 1',
    'set services 10.96.0.10:80/6 slot 0',
    'set services 10.96.0.10:0/0 slot 0',
  ]);
  const master = maps.services4.get({ address: '10.96.0.10', port: 80, slot: 0, proto: 6, scope: 0 })!;
  t.match(master, { count: 2, qcount: 1, revNat: 1 }, 'the terminating backend is after the active ones, counted in qcount');
  t.equal(maps.backends4.get(3)!.flags, 1, 'BE_STATE_TERMINATING');

  log.length = 0;
  mgr.setBackends('default/web', [be('10.0.1.2', 8080)]);
  await ops.update([['10.96.0.10:80/TCP', mgr.frontends.get('10.96.0.10:80/TCP')!.value]]);
  t.same(log.map(short), [
    'set services 10.96.0.10:80/6 slot 1', 'set maglev 1', 'set reverse_nat 1', 'set services 10.96.0.10:80/6 slot 0',
    'del services 10.96.0.10:80/6 slot 2', 'del services 10.96.0.10:80/6 slot 3',
    'del backends 1', 'del backends 3',
  ], 'unchanged backends are not rewritten; slots above the count and unused backends go after the master');

  log.length = 0;
  await ops.delete(['10.96.0.10:80/TCP']);
  t.same(log.map(short), [
    'del services 10.96.0.10:80/6 slot 0', 'del services 10.96.0.10:0/0 slot 0', 'del reverse_nat 1', 'del maglev 1',
    'del services 10.96.0.10:80/6 slot 1', 'del backends 2',
  ]);
  for (const name of Object.keys(LB_MAP_NAMES)) {
    const m = (maps as unknown as Record<string, LBMap<unknown, unknown> | undefined>)[name];
    if (m) t.same(m.entries(), [], `${m.name} is empty again`);
  }
});

t.test('shared backends keep one ID; affinity match entries follow the backends', async (t) => {
  const { maps } = recordingMaps();
  const ops = new LBOps(maps, { algorithm: 'random', maglevTableSize: 251, maxBackends: 100 });
  const mgr = new LBServiceManager();
  mgr.upsert(upsert('a/a', '10.96.0.1', 80, [be('10.0.1.1', 80)]));
  mgr.upsert({ ...upsert('a/b', '10.96.0.2', 80, [be('10.0.1.1', 80), be('10.0.1.2', 80)]), service: { ...upsert('a/b', '', 0, []).service, sessionAffinity: true, sessionAffinityTimeoutSec: 30 } });
  const r = new Reconciler(mgr.frontends, ops);
  r.start();
  await r.flush();
  t.same(maps.backends4.entries().map(([id, v]) => [id, v.address]), [[1, '10.0.1.1'], [2, '10.0.1.2']]);
  t.same(maps.affinityMatch.entries().map(([k]) => k), [{ backendId: 1, revNat: 2 }, { backendId: 2, revNat: 2 }]);
  t.match(maps.services4.get({ address: '10.96.0.2', port: 80, slot: 0, proto: 6, scope: 0 }), { backendId: 30, flags: 1 << 4 }, 'the master carries the affinity timeout and SVC_FLAG_AFFINITY');
  t.same(maps.maglev4.entries(), [], 'no Maglev tables with --bpf-lb-algorithm=random');
  mgr.deleteService('a/b');
  await r.flush();
  t.same(maps.backends4.entries().map(([id]) => id), [1], 'the backend a/a still uses stays');
  t.same(maps.affinityMatch.entries(), []);
  await r.stop();
});

t.test('the writer opens lazily opened maps at its first write, not when it is made', async (t) => {
  // the BPF datapath's LB maps open on first touch, after the datapath's start mounted bpffs and
  // made --bpf-root: a writer touching them when constructed failed every fresh start
  let opened = 0;
  const maps = lazyLBMaps(() => {
    opened++;
    return memoryLBMaps();
  });
  const ops = new LBOps(maps, { algorithm: 'random', maglevTableSize: 251, maxBackends: 100 });
  t.equal(opened, 0, 'constructing the writer opens nothing');
  const mgr = new LBServiceManager();
  mgr.upsert(upsert('a/a', '10.96.0.1', 80, [be('10.0.1.1', 80)]));
  t.same([...(await ops.update(mgr.frontends.due().map((o) => [o.key, o.value] as const))).values()], []);
  t.equal(opened, 1, 'the first write opened the maps once');
  t.equal(maps.backends4.entries().length, 1);
});

t.test('a failing map: status error with the message, retried with backoff until it works', async (t) => {
  const { maps, failing } = recordingMaps();
  const mgr = new LBServiceManager();
  const r = new Reconciler(mgr.frontends, new LBOps(maps, { algorithm: 'random', maglevTableSize: 251, maxBackends: 100 }), { retryMinMs: 10, retryMaxMs: 20 });
  failing.add('cellium_lb4_reverse_nat');
  r.start();
  mgr.upsert(upsert('a/a', '10.96.0.1', 80, [be('10.0.1.1', 80)]));
  await r.flush();
  t.match(mgr.get(1), { state: 'error', message: /E2BIG writing cellium_lb4_reverse_nat/ });
  t.notOk(maps.services4.get({ address: '10.96.0.1', port: 80, slot: 0, proto: 6, scope: 0 }), 'no master entry before its reverse NAT');
  failing.clear();
  for (let i = 0; i < 100 && mgr.get(1)!.state !== 'done'; i++) await new Promise((res) => setTimeout(res, 10));
  t.equal(mgr.get(1)!.state, 'done');
  t.ok(maps.services4.get({ address: '10.96.0.1', port: 80, slot: 0, proto: 6, scope: 0 }));
  await r.stop();
});

t.test('after a restart: backend IDs are taken over, orphans and drift are pruned', async (t) => {
  const kernel = memoryLBMaps();
  {
    const mgr = new LBServiceManager();
    const ops = new LBOps(kernel, { algorithm: 'random', maglevTableSize: 251, maxBackends: 100 });
    mgr.upsert(upsert('a/keep', '10.96.0.1', 80, [be('10.0.1.7', 80)]));
    mgr.upsert(upsert('a/gone', '10.96.0.2', 80, [be('10.0.1.8', 80), be('10.0.1.9', 80)]));
    mgr.upsert(upsert('a/v6', 'fd00::2', 80, [be('fd00:1::9', 80)]));
    await ops.update(mgr.frontends.all().map((o) => [o.key, o.value] as const));
  }
  const idOf = (ip: string) => kernel.backends4.entries().find(([, v]) => v.address === ip)?.[0];
  const before = idOf('10.0.1.7');
  const mgr = new LBServiceManager();
  mgr.upsert(upsert('a/new', '10.96.0.3', 80, [be('10.0.1.10', 80)]));
  mgr.upsert(upsert('a/keep', '10.96.0.1', 80, [be('10.0.1.7', 80)]));
  const ops = new LBOps(kernel, { algorithm: 'random', maglevTableSize: 251, maxBackends: 100 });
  t.equal(ops.restore(), 3);
  const r = new Reconciler(mgr.frontends, ops);
  r.start();
  await r.flush();
  t.equal(idOf('10.0.1.7'), before, 'the surviving backend keeps its ID');
  t.not(idOf('10.0.1.10'), before, 'a new backend gets an ID of its own');
  const { pruned } = await r.prune();
  t.equal(pruned, 2, 'the frontends no service has any more');
  t.same(kernel.services4.entries().filter(([k]) => k.port === 80 && k.slot === 0).map(([k]) => k.address).sort(), ['10.96.0.1', '10.96.0.3']);
  t.same(kernel.services6.entries(), []);
  t.same(kernel.backends4.entries().map(([, v]) => v.address).sort(), ['10.0.1.10', '10.0.1.7']);
  t.same(kernel.backends6.entries(), []);
  (kernel.services4 as MemoryLBMap<never, never>).delete([{ address: '10.96.0.1', port: 80, slot: 0, proto: 6, scope: 0 } as never]);
  const again = await r.prune();
  t.equal(again.repaired, 1, 'a master entry deleted behind our back is rewritten');
  t.ok(kernel.services4.get({ address: '10.96.0.1', port: 80, slot: 0, proto: 6, scope: 0 }));
  await r.stop();
});

t.test('the wildcard entry of a VIP lives as long as a ClusterIP frontend on it, and goes when its frontend becomes another type', async (t) => {
  const maps = memoryLBMaps();
  const ops = new LBOps(maps, { algorithm: 'random', maglevTableSize: 251, maxBackends: 100 });
  const mgr = new LBServiceManager();
  const wildcard = { address: '10.96.7.1', port: 0, slot: 0, proto: 0, scope: 0 };
  const sync = async (): Promise<void> => {
    const dels = mgr.frontends.deletions();
    t.same((await ops.delete(dels)).size, 0);
    for (const k of dels) mgr.frontends.deleted(k);
    t.same((await ops.update(mgr.frontends.due().map((o) => [o.key, o.value] as const))).size, 0);
  };
  mgr.upsert(upsert('default/a', '10.96.7.1', 80, [be('10.0.7.1', 8080)]));
  mgr.upsert(upsert('default/b', '10.96.7.1', 81, [be('10.0.7.1', 8081)]));
  await sync();
  t.ok(maps.services4.get(wildcard), 'two ClusterIPs on the VIP: its wildcard entry');
  mgr.deleteService('default/a');
  await sync();
  t.ok(maps.services4.get(wildcard), 'one left: the wildcard stays');
  // (a NodePort frontend off the surrogate must use a port of --node-port-range: another type here)
  const asExternal = upsert('default/b', '10.96.7.1', 81, [be('10.0.7.1', 8081)]);
  mgr.upsert({ ...asExternal, frontends: asExternal.frontends.map((f) => ({ ...f, type: 'ExternalIPs' as const })) });
  await sync();
  t.notOk(maps.services4.get(wildcard), 'its last ClusterIP became an ExternalIPs frontend: no wildcard (other ports of the address are not dropped)');
  t.ok(maps.services4.get({ address: '10.96.7.1', port: 81, slot: 0, proto: 6, scope: 0 }), 'the ExternalIPs frontend itself is written');
  mgr.deleteService('default/b');
  await sync();
  t.same(maps.services4.entries(), [], 'nothing left');
});
