// The conntrack garbage collector of the BPF datapath: Cilium's adaptive interval (pure); and, as
// root, on the datapath's real maps: expired entries go and live ones stay (lifetime against
// CLOCK_MONOTONIC), a pinned interval stays, reports feed the metrics, the health line; a deleted
// endpoint's addresses are scrubbed in the background (either side of a connection) while a load
// for such an address waits for the scrub; stale endpoints found at restore are scrubbed too.
import t from 'tap';
import { Registry } from 'prom-client';
import { monotonicSeconds, type CtMaps } from '../../src/maps/index.js';
import type { CtEntry, CtKey } from '../../src/datapath/conntrack.js';
import { GC_MAX_LRU_MS, GC_MIN_MS, GC_START_MS, nextGcInterval, registerCtGcMetrics, type GcReport } from '../../src/cells/datapath-bpf/index.js';
import { skipUnlessBpf, startedDatapath } from './helpers.js';

const skip = skipUnlessBpf();

t.test("Cilium's adaptive interval", async (t) => {
  t.equal(GC_START_MS, 300_000, 'starts at 5 minutes');
  t.equal(nextGcInterval(GC_START_MS, 0), GC_START_MS, 'nothing deleted: unchanged');
  t.equal(nextGcInterval(GC_START_MS, 0.01), 450_000, 'under 5 % deleted: 1.5x longer');
  t.equal(nextGcInterval(GC_START_MS, 0.1), GC_START_MS, '5-25 %: unchanged');
  t.equal(nextGcInterval(GC_START_MS, 0.5), 150_000, 'half the map deleted: half the interval');
  t.equal(nextGcInterval(GC_START_MS, 1), 30_000, 'at most 90 % shorter');
  t.equal(nextGcInterval(20_000, 0.9), GC_MIN_MS, 'never under 10 s');
  t.equal(nextGcInterval(GC_MAX_LRU_MS, 0.01), GC_MAX_LRU_MS, 'never over 12 h');
  t.equal(nextGcInterval(60_000, 0.01, 80_000), 80_000, 'or the configured maximum');
});

const entry = (lifetime: number, srcSecId = 1): CtEntry => ({
  rxPackets: 0, rxBytes: 0, txPackets: 1, txBytes: 60, lifetime, flags: 0, revNat: 0, txFlagsSeen: 0, rxFlagsSeen: 0, srcSecId, lastTxReport: 0, lastRxReport: 0,
});
const tcp4 = (daddr: string, saddr: string, sport: number): CtKey => ({ family: 'ipv4', daddr, saddr, dport: 80, sport, nexthdr: 6, flags: 0 });
const udp6 = (daddr: string, saddr: string, sport: number): CtKey => ({ family: 'ipv6', daddr, saddr, dport: 53, sport, nexthdr: 17, flags: 1 });

function keys(ct: CtMaps): string[] {
  return ct.entries().map((e) => `${e.key.daddr}>${e.key.saddr}:${e.key.sport}`).sort();
}

t.test('a run deletes the expired entries of every map and keeps the live ones', { skip }, async (t) => {
  const dp = startedDatapath(t, { conntrackGcInterval: 0 });
  const ct = dp.kernel.ct;
  // start right after a second turned, so that the run below sees the same `now` (lifetime == now must still be alive)
  const turned = monotonicSeconds();
  while (monotonicSeconds() === turned) await new Promise((r) => setTimeout(r, 2));
  const now = monotonicSeconds();
  const put = (k: CtKey, lifetime: number): void => void ct.mapOf(k).set(k, entry(lifetime));
  for (let i = 0; i < 600; i++) put(tcp4('10.1.0.1', '10.1.0.2', 1000 + i), now - 1 - (i % 5));
  put(tcp4('10.1.0.1', '10.1.0.2', 80), now + 100);
  put(tcp4('10.1.0.1', '10.1.0.2', 81), now);
  put(udp6('fd00::1', 'fd00::2', 1), now - 10);
  put(udp6('fd00::1', 'fd00::2', 2), now + 10);
  const reports: GcReport[] = [];
  dp.gc.reports$.subscribe((r) => reports.push(r));
  const registry = new Registry();
  const metrics = registerCtGcMetrics(registry, dp.gc);
  dp.gc.reports$.subscribe((r) => metrics.record(r)); // the cell's observer job conntrack-gc-metrics, here by hand
  const run = await dp.gc.collect();
  t.equal(run.deleted, 601, 'the 600 expired IPv4 TCP entries and the expired IPv6 UDP one');
  t.equal(run.scanned, 604);
  t.same(keys(ct), ['10.1.0.1>10.1.0.2:80', '10.1.0.1>10.1.0.2:81', 'fd00::1>fd00::2:2'], 'live entries stay (lifetime == now is alive)');
  t.equal(reports.length, 4, 'one report per map');
  t.ok(reports.every((r) => r.kind === 'gc' && r.completed));
  t.equal(dp.gc.intervalMs, Math.max(GC_MIN_MS, Math.round(GC_START_MS * (1 - 600 / 1024) / 1000) * 1000), 'most of a map expired: a shorter interval');
  const text = await registry.metrics();
  t.match(text, /cellium_datapath_conntrack_gc_runs_total\{family="ipv4",protocol="TCP",status="completed"\} 1/);
  t.match(text, /cellium_datapath_conntrack_gc_entries\{family="ipv4",protocol="TCP",status="deleted"\} 600/);
  t.match(text, /cellium_datapath_conntrack_gc_entries\{family="ipv6",protocol="non-TCP",status="alive"\} 1/);
  t.match(text, /cellium_datapath_conntrack_gc_interval_seconds\{global="global"\} \d+/);
  t.match(dp.gc.describe(), /^conntrack GC: last run deleted 601 of 604 entries in \d+ ms, 0 scrubbed for deleted endpoints, next in \d+s$/, 'the health line');
});

t.test('a pinned interval stays whatever a run deletes', { skip }, async (t) => {
  const dp = startedDatapath(t, { conntrackGcInterval: 2000 });
  const k = tcp4('10.1.0.1', '10.1.0.2', 5);
  dp.kernel.ct.mapOf(k).set(k, entry(monotonicSeconds() - 5));
  await dp.gc.collect();
  t.equal(dp.gc.intervalMs, 2000);
  t.match(dp.gc.describe(), /next in 2s \(pinned\)/);
});

t.test("a deleted endpoint's addresses are scrubbed in the background; a load for them waits", { skip }, async (t) => {
  const dp = startedDatapath(t);
  const ct = dp.kernel.ct;
  const far = monotonicSeconds() + 1000;
  const put = (k: CtKey): void => void ct.mapOf(k).set(k, entry(far));
  put(tcp4('10.9.0.5', '10.9.0.6', 1)); // 10.9.0.5 opened it
  put(tcp4('10.9.0.7', '10.9.0.5', 2)); // 10.9.0.5 was its destination
  put(tcp4('10.9.0.7', '10.9.0.6', 3)); // another pair
  put(udp6('fd00::5', 'fd00::9', 4));
  put(udp6('fd00::8', 'fd00::9', 5));
  dp.maps.setEndpoint(42, [
    { ip: '10.9.0.5', endpointId: 42, ifIndex: 1, identity: 5000, mac: '' },
    { ip: 'fd00::5', endpointId: 42, ifIndex: 1, identity: 5000, mac: '' },
  ]);
  let settled = false;
  dp.maps.deleteEndpoint(42);
  const gate = dp.gc.settled(['10.9.0.5']).then(() => (settled = true));
  t.notOk(settled, 'deleteEndpoint returned before the scrub finished');
  await gate;
  t.same(keys(ct), ['10.9.0.7>10.9.0.6:3', 'fd00::8>fd00::9:5'], 'every connection of 10.9.0.5 and fd00::5 is gone, the others stay');
  t.equal(dp.gc.scrubDeleted, 3);
  await dp.gc.settled(['10.9.0.99', undefined]);
  t.pass('nothing pending for other addresses');
});

t.test('endpoints deleted while the agent was down are scrubbed at restore', { skip }, async (t) => {
  const dp = startedDatapath(t);
  const ct = dp.kernel.ct;
  const k = tcp4('10.9.1.5', '10.9.1.6', 1);
  ct.mapOf(k).set(k, entry(monotonicSeconds() + 1000));
  const live = tcp4('10.9.1.7', '10.9.1.6', 2);
  ct.mapOf(live).set(live, entry(monotonicSeconds() + 1000));
  dp.kernel.lxc.set('10.9.1.5', { ifIndex: 0, identity: 5000, endpointId: 77, mac: '' });
  dp.kernel.lxc.set('10.9.1.7', { ifIndex: 0, identity: 5001, endpointId: 78, mac: '' });
  // restore, step 1: what endpoints that were not restored left goes, their connections too
  await dp.removeStale([{ id: 78, ips: ['10.9.1.7'] }]);
  await dp.gc.settled(['10.9.1.5']);
  t.same(keys(ct), ['10.9.1.7>10.9.1.6:2'], "the stale endpoint's connection is gone, the restored one's stays");
  await dp.restoreDone([{ id: 78, ips: ['10.9.1.7'] }]);
  t.same(keys(ct), ['10.9.1.7>10.9.1.6:2']);
});
