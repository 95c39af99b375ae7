// Privileged: the BPF datapath's maps converge on the desired state through their reconcilers.
// Desired lxc, ipcache and policy entries reach the kernel maps; an entry deleted by hand is
// restored and one added by hand is removed by the prune round; a write the kernel refuses (a
// policy map too small) is retried with backoff and reported in the map's status until the
// desired state fits again; flush() reports the failure to the regeneration that caused it.
import t from 'tap';
import { openIPCacheMap, openLxcMap, openPolicyMap } from '../../src/maps/index.js';
import { Proto, type PolicyEntry } from '../../src/cells/datapath/index.js';
import { describeTables } from '../../src/cells/datapath-bpf/index.js';
import { skipUnlessBpf, startedDatapath } from './helpers.js';

const skip = skipUnlessBpf();
const allowWeb: PolicyEntry[] = [
  { identity: 1000, direction: 'ingress', protocol: Proto.TCP, port: 80, deny: false },
  { identity: 1001, direction: 'egress', protocol: 0, port: 0, deny: false },
  { identity: 0, direction: 'ingress', protocol: Proto.UDP, port: 53, deny: true },
];

t.test('desired state reaches the kernel maps; prune restores what was deleted by hand and removes what was added', { skip }, async (t) => {
  const dp = startedDatapath(t);
  const root = dp.cfg.bpfRoot;
  dp.maps.setEndpoint(7, [{ ip: '10.77.0.7', endpointId: 7, ifIndex: 42, identity: 1000, mac: '0A:00:00:00:00:07' }]);
  dp.maps.upsertIPCache({ cidr: '10.77.0.7/32', identity: 1000 });
  dp.maps.upsertIPCache({ cidr: '192.0.2.0/24', identity: 16777217 });
  dp.maps.setPolicy(7, allowWeb);
  t.same(await dp.maps.flush(), [], 'no failures');
  await dp.restoreDone([{ id: 7, ips: ['10.77.0.7'] }]);

  const lxc = openLxcMap(root);
  const ipc = openIPCacheMap(root);
  const pol = openPolicyMap(root, 7);
  t.teardown(() => [lxc, ipc, pol].forEach((m) => m.close()));
  t.same(lxc.get('10.77.0.7'), { ifIndex: 42, identity: 1000, endpointId: 7, mac: '0a:00:00:00:00:07' }, 'the lxc entry is in the kernel');
  t.equal(ipc.get('192.0.2.0/24')?.identity, 16777217, 'the CIDR entry is in the kernel');
  t.equal(pol.entries().length, 3, 'three policy keys in cellium_policy_00007');

  // drift: delete a desired entry, add an undesired one, change a value, in every map
  lxc.delete('10.77.0.7');
  lxc.set('10.77.0.99', { ifIndex: 1, identity: 5, endpointId: 99, mac: '00:00:00:00:00:01' });
  ipc.set('198.51.100.0/24', { identity: 2, flags: 0 });
  ipc.set('192.0.2.0/24', { identity: 2, flags: 0 });
  const [first] = pol.entries();
  pol.delete(first![0]);
  pol.set({ prefixLen: 64, egress: true, identity: 4242, protocol: Proto.TCP, dport: 22 }, false);

  const r = await dp.prune();
  // the policy map is one object of its endpoint: its extra entry is repaired with it, not pruned apart
  t.ok(r && r.pruned >= 2, `extra lxc and ipcache entries pruned (${r?.pruned})`);
  t.ok(r && r.repaired >= 3, `missing and changed entries repaired (${r?.repaired})`);
  t.same(lxc.get('10.77.0.7')?.endpointId, 7, 'the lxc entry deleted by hand is back');
  t.notOk(lxc.get('10.77.0.99'), 'the lxc entry added by hand is gone');
  t.notOk(ipc.get('198.51.100.0/24'), 'the ipcache entry added by hand is gone');
  t.equal(ipc.get('192.0.2.0/24')?.identity, 16777217, 'the ipcache entry changed by hand is rewritten');
  t.same(pol.entries().map(([k]) => k.identity).sort(), [0, 1000, 1001], 'the policy map holds exactly the desired keys again');
  const status = describeTables(dp.maps.report());
  t.ok(status.ok, status.message);
});

t.test('prune waits for restore: entries of endpoints not restored yet are left alone', { skip }, async (t) => {
  const dp = startedDatapath(t);
  const lxc = openLxcMap(dp.cfg.bpfRoot);
  t.teardown(() => lxc.close());
  lxc.set('10.77.1.5', { ifIndex: 3, identity: 300, endpointId: 5, mac: '00:00:00:00:00:05' });
  t.equal(await dp.prune(), undefined, 'no prune before restore');
  t.ok(lxc.get('10.77.1.5'), 'the entry of a not yet restored endpoint stays');
  await dp.restoreDone([]);
  await dp.prune();
  t.notOk(lxc.get('10.77.1.5'), 'after restore, what nobody desires is pruned');
});

t.test('a write the kernel refuses is retried with backoff and reported until it fits', { skip }, async (t) => {
  const dp = startedDatapath(t, { bpfPolicyMapMax: 16 });
  const many: PolicyEntry[] = Array.from({ length: 24 }, (_, i) => ({ identity: 2000 + i, direction: 'ingress', protocol: Proto.TCP, port: 8080, deny: false }));
  dp.maps.setPolicy(9, many);
  const failures = await dp.maps.flush();
  t.ok(failures.length > 0, 'flush reports the failed writes');
  t.match(failures[0], /^cellium_policy 9: /, 'naming the table and the endpoint');
  const dump = await dp.maps.get('cellium_policy_00009');
  t.equal(dump?.status.state, 'error', 'the map status is error');
  t.match(dump?.status.message, /full|E2BIG|ENOSPC|No space|too big/i, 'with the kernel\'s reason');
  const report = dp.maps.report().find((x) => x.name === 'cellium_policy')!;
  t.ok(report.errors > 0 && report.reconciler.failures > 0, 'counted in the table report');
  const before = report.reconciler.failures;
  await new Promise((r) => setTimeout(r, 400));
  t.ok(dp.maps.report().find((x) => x.name === 'cellium_policy')!.reconciler.failures > before, 'retried with backoff');
  t.notOk(describeTables(dp.maps.report()).ok, 'health would be degraded');

  dp.maps.setPolicy(9, many.slice(0, 10));
  t.same(await dp.maps.flush(), [], 'a policy that fits is written');
  const again = await dp.maps.get('cellium_policy_00009');
  t.equal(again?.status.state, 'done');
  t.equal(again?.entries.length, 10, 'the kernel holds the 10 entries');
});

t.test('flush(endpointId) reports that endpoint\'s failures, whoever flushed in between', { skip }, async (t) => {
  const dp = startedDatapath(t, { bpfPolicyMapMax: 16 });
  const many: PolicyEntry[] = Array.from({ length: 24 }, (_, i) => ({ identity: 3000 + i, direction: 'egress', protocol: Proto.UDP, port: 53, deny: false }));
  dp.maps.setPolicy(9, many);
  dp.maps.setPolicy(10, allowWeb);
  t.same(await dp.maps.flush(undefined, 10), [], 'endpoint 10\'s own writes succeeded: its regeneration is not failed by 9\'s');
  const nine = await dp.maps.flush(undefined, 9);
  t.ok(nine.length > 0 && nine.every((f) => f.startsWith('cellium_policy 9: ')), 'endpoint 9 gets its own failures, after another flush ran');
  t.ok((await dp.maps.flush(undefined, 9)).length > 0, 'and again while the kernel still does not hold them');
  dp.maps.setPolicy(12, [{ identity: 1, direction: 'ingress', protocol: 0, port: 80, deny: false }]);
  t.match(await dp.maps.flush(undefined, 12), [/^cellium_policy_00012: .*a port needs a protocol/], 'a policy the map cannot represent is reported to its endpoint');
  t.same(await dp.maps.flush(undefined, 10), [], 'and not to another');
});

t.test('deleting an endpoint\'s policy removes its entries and unpins its map; map dumps read the kernel', { skip }, async (t) => {
  const dp = startedDatapath(t);
  dp.maps.setPolicy(11, allowWeb);
  dp.maps.setEndpoint(11, [{ ip: 'fd00::11', endpointId: 11, ifIndex: 9, identity: 1000, mac: '' }]);
  await dp.maps.flush();
  const names = (await dp.maps.list()).map((m) => m.name);
  t.same(names, ['cellium_lxc', 'cellium_ipcache', 'cellium_metrics', 'cellium_policy_00011'], 'listed maps');
  const summary = await dp.maps.summary();
  t.same(summary.map((m) => m.name), names, 'the summary names the same maps');
  t.same(summary.find((m) => m.name === 'cellium_policy_00011')?.size, 3, 'with their entry counts, without reading them');
  t.same(summary.find((m) => m.name === 'cellium_lxc')?.size, 1);
  const lxcDump = await dp.maps.get('cellium_lxc');
  t.same(lxcDump?.entries, [{ key: 'fd00::11', value: 'id=11 ifindex=9 identity=1000 mac=00:00:00:00:00:00' }]);
  t.match((await dp.maps.get('cellium_metrics'))?.entries.map((e) => e.key), ['policy', 'policy-deny', 'invalid', 'unsupported-l3', 'ct-insert-failed', 'no-service', 'no-backend']);
  dp.maps.deletePolicy(11);
  dp.maps.deleteEndpoint(11);
  t.same(await dp.maps.flush(), []);
  t.equal(await dp.maps.get('cellium_policy_00011'), undefined, 'the policy map is gone');
  t.same((await dp.maps.get('cellium_lxc'))?.entries, [], 'the lxc entry is gone');
  t.equal(await dp.maps.get('no_such_map'), undefined);
});

t.test('the host\'s own addresses are in the ipcache as the host identity', { skip }, async (t) => {
  const dp = startedDatapath(t);
  await dp.maps.flush();
  const ipc = await dp.maps.get('cellium_ipcache');
  t.ok(ipc?.entries.some((e) => e.key === '127.0.0.1/32' && e.value === 'identity=1'), 'loopback resolves to host');
});
