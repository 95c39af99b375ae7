// The conntrack pressure accounting (pure): evictions are what a map lost beyond userspace's
// deletes between two scans; none at the first scan, none when the counters were recreated; a
// flush counted as deletes is no eviction; an early run is due once the datapath may have filled a
// map or doubled it; the health state is degraded while a map evicts or is 90 % full, naming the
// flag of that map.
import t from 'tap';
import { CT_GROWTH_FLOOR, CtPressure } from '../../src/cells/datapath-bpf/index.js';
import type { CtMapCounts, CtMapName } from '../../src/maps/index.js';

const counts = (created: number, userDeleted = 0): CtMapCounts => ({ created, userDeleted });
const all = (tcp4: CtMapCounts): Record<CtMapName, CtMapCounts> => ({
  cellium_ct4_global: tcp4, cellium_ct_any4_global: counts(0), cellium_ct6_global: counts(0), cellium_ct_any6_global: counts(0),
});

t.test('evictions are the entries lost beyond the deletes userspace counted', async (t) => {
  const p = new CtPressure();
  t.equal(p.account('cellium_ct4_global', 1024, counts(100), 100, 10, counts(100, 10)).evicted, 0, 'the first scan is the baseline');
  // 90 alive; the datapath created 2000 more, nothing deleted by userspace, 1024 found: 1066 evicted
  const r = p.account('cellium_ct4_global', 1024, counts(2100, 10), 1024, 0, counts(2100, 10));
  t.same(r, { map: 'cellium_ct4_global', maxEntries: 1024, alive: 1024, evicted: 90 + 2000 - 1024 });
  // a flush of 1024 (counted), 5 created since: 5 found, no eviction
  t.equal(p.account('cellium_ct4_global', 1024, counts(2105, 1034), 5, 0, counts(2105, 1034)).evicted, 0, 'a counted flush is no eviction');
  t.equal(p.evictedTotal('cellium_ct4_global'), 1066);
  // more found than accounted for (entries added during the previous scan): never negative
  t.equal(p.account('cellium_ct4_global', 1024, counts(2105, 1034), 50, 0, counts(2105, 1034)).evicted, 0);
  // the counters went back (cellium_ct_stats recreated): a new baseline, no eviction
  t.equal(p.account('cellium_ct4_global', 1024, counts(3), 0, 0, counts(3)).evicted, 0);
});

t.test('an early run is due once a map may have filled or doubled', async (t) => {
  const p = new CtPressure();
  t.notOk(p.mayHaveGrown(all(counts(0))), 'never scanned: the interval decides');
  p.account('cellium_ct4_global', 1024, counts(0), 16, 0, counts(0));
  t.notOk(p.mayHaveGrown(all(counts(CT_GROWTH_FLOOR - 1))), 'a few new entries');
  t.ok(p.mayHaveGrown(all(counts(CT_GROWTH_FLOOR))), 'many more than it held (16 alive, then 886 would be stale)');
  p.account('cellium_ct4_global', 1024, counts(0), 1000, 0, counts(0));
  t.ok(p.mayHaveGrown(all(counts(24))), 'as many as it had room for');
});

t.test('the health state: ok with the occupancy, degraded while a map evicts or is 90 % full', async (t) => {
  const p = new CtPressure();
  t.same(p.state(), { degraded: false, message: 'conntrack: not scanned yet' });
  p.account('cellium_ct4_global', 1024, counts(0), 10, 0, counts(0));
  p.account('cellium_ct_any4_global', 1024, counts(0), 2, 0, counts(0));
  t.same(p.state(), { degraded: false, message: 'conntrack: cellium_ct4_global 10/1024, cellium_ct_any4_global 2/1024; 0 evicted in all' });
  p.account('cellium_ct_any4_global', 1024, counts(1000), 930, 0, counts(1000));
  t.same(p.state().degraded, true, '90 % full');
  t.match(p.state().message, /^conntrack table under pressure: cellium_ct_any4_global 930\/1024 \(91%\), 72 evicted since the last run, 72 in all: .* raise --bpf-ct-global-any-max$/);
  p.account('cellium_ct4_global', 1024, counts(3000), 1024, 0, counts(3000));
  t.match(p.state().message, /raise --bpf-ct-global-tcp-max and --bpf-ct-global-any-max$/, 'both flags when both kinds are under pressure');
});
