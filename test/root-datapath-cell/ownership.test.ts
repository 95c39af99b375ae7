// Privileged: what an endpoint owns in the kernel, and only that (issue 11). Unloading an endpoint
// never detaches another endpoint's program from a shared interface; a program taken off by hand
// (`tc filter del`, `bpftool link detach`) is found by checkAttached and by the prune, which reports
// it on programsLost$; restore step 1 (removeStale) removes everything an endpoint that was not
// restored left (programs, policy map, cellium_lxc and ipcache entries; and the interface its
// programs guarded, so that its pod is cut off rather than left running with no enforcement) and
// nothing of the live ones, so a new endpoint reusing a stale ID starts from an empty policy map; step 2 (restoreDone)
// prunes what nobody desires but keeps live endpoints' entries.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { firstValueFrom, take, toArray } from 'rxjs';
import { openIPCacheMap, openLxcMap, openPolicyMap, policyMapPath } from '../../src/maps/index.js';
import { endpointPrograms, lxcLinkPath } from '../../src/cells/datapath-bpf/lxc/index.js';
import { Proto, type EndpointDatapathConfig } from '../../src/cells/datapath/index.js';
import { BpfDatapath } from '../../src/cells/datapath-bpf/index.js';
import { silentLogger } from '../../src/hive/index.js';
import { hostVeth, skipUnlessBpf, startedDatapath } from './helpers.js';
import { needs } from '../needs.js';

const skip = skipUnlessBpf();

type Link = ReturnType<typeof hostVeth>;
const cfgOf = (id: number, link: Link, ip: string): EndpointDatapathConfig => ({ id, identity: 70100 + id, ipv4: ip, ifName: link.ifName, ifIndex: link.ifIndex, mac: '02:00:00:00:01:01', hostMac: link.mac });
const ids = (p: { tcx: number[]; legacy?: number }): number[] => (p.legacy !== undefined ? [...p.tcx, p.legacy] : p.tcx);

for (const mode of ['legacy', 'tcx'] as const) {
  t.test(`unloading an endpoint leaves another endpoint's programs on a shared interface (${mode})`, { skip }, async (t) => {
    const dp = startedDatapath(t, { bpfAttachMode: mode });
    const link = hostVeth(t);
    await dp.loader.reloadEndpoint(cfgOf(30, link, '10.80.0.30'));
    const before = endpointPrograms(link.ifIndex);
    await dp.loader.unloadEndpoint(31, link.ifName);
    t.same(endpointPrograms(link.ifIndex), before, "endpoint 31's unload on the same interface detached nothing of 30's");
    t.equal(await dp.loader.checkAttached(30), undefined, 'endpoint 30 is still attached');
    await dp.loader.unloadEndpoint(30, link.ifName);
    const after = endpointPrograms(link.ifIndex);
    t.same([ids(after.from_container), ids(after.to_container)], [[], []], "the owner's unload removes its programs");
  });
}

t.test("a legacy filter that is another agent's bpf_lxc of the same endpoint ID is not removed", { skip }, async (t) => {
  const ours = startedDatapath(t, { bpfAttachMode: 'legacy' });
  const theirs = startedDatapath(t, { bpfAttachMode: 'legacy' });
  const link = hostVeth(t);
  await theirs.loader.reloadEndpoint(cfgOf(40, link, '10.80.0.40'));
  const before = endpointPrograms(link.ifIndex);
  await ours.loader.unloadEndpoint(40, link.ifName);
  t.same(endpointPrograms(link.ifIndex), before, 'bound to another ipcache: not ours');
  await theirs.loader.unloadEndpoint(40, link.ifName);
});

t.test('a program taken off by hand: checkAttached says what is missing, the prune reports it, a reload clears it', { skip }, async (t) => {
  const dp = startedDatapath(t, { bpfAttachMode: 'legacy' });
  const link = hostVeth(t);
  const other = hostVeth(t);
  const cfg = cfgOf(50, link, '10.80.0.50');
  await dp.loader.reloadEndpoint(cfg);
  await dp.loader.reloadEndpoint(cfgOf(51, other, '10.80.0.51'));
  await dp.restoreDone([{ id: 50, ips: ['10.80.0.50'] }, { id: 51, ips: ['10.80.0.51'] }]);
  t.equal(await dp.loader.checkAttached(50), undefined, 'attached');
  const progId = endpointPrograms(link.ifIndex).from_container.legacy!;
  execFileSync('tc', ['filter', 'del', 'dev', link.ifName, 'ingress']);
  t.equal(await dp.loader.checkAttached(50), `its program from_container (id ${progId}) is no longer attached at tc ingress of ${link.ifName} (nothing is)`);
  t.equal(await dp.loader.checkAttached(51), undefined, 'the other endpoint is fine');
  const reported = firstValueFrom(dp.programsLost$.pipe(take(1), toArray()));
  await dp.prune();
  t.same(await reported, [{ endpointId: 50, why: `its program from_container (id ${progId}) is no longer attached at tc ingress of ${link.ifName} (nothing is)` }], 'the prune reports endpoint 50 only');
  await dp.loader.reloadEndpoint(cfg);
  t.equal(await dp.loader.checkAttached(50), undefined, 'a reload puts it back');
  t.ok(await dp.loader.isLoaded(cfg));
  ip('link', 'del', other.ifName);
  t.match(await dp.loader.checkAttached(51), /its interface .* is gone|no longer attached/, 'an interface that went away is reported too');
});

t.test('a tcx link detached by hand is reported; the reload attaches a new one', { skip: skip || needs('bpftool') }, async (t) => {
  const dp = startedDatapath(t, { bpfAttachMode: 'tcx' });
  const link = hostVeth(t);
  const cfg = cfgOf(60, link, '10.80.0.60');
  await dp.loader.reloadEndpoint(cfg);
  execFileSync('bpftool', ['link', 'detach', 'pinned', lxcLinkPath(dp.cfg.bpfRoot, 60, 'to_container')]);
  t.match(await dp.loader.checkAttached(60), new RegExp(`its program to_container \\(id \\d+\\) is no longer attached at tc egress of ${link.ifName}`));
  await dp.loader.reloadEndpoint(cfg);
  t.equal(await dp.loader.checkAttached(60), undefined);
  t.ok(await dp.loader.isLoaded(cfg), 'loaded and attached again');
});

t.test('restore step 1 removes what endpoints that were not restored left, and nothing of the live ones', { skip }, async (t) => {
  const first = startedDatapath(t, { bpfAttachMode: 'legacy' });
  const live = hostVeth(t);
  const stale = hostVeth(t);
  const allowAll = [{ identity: 0, direction: 'ingress' as const, protocol: 0, port: 0, deny: false }];
  for (const [id, link, ip] of [[70, live, '10.80.0.70'], [71, stale, '10.80.0.71']] as const) {
    const cfg = cfgOf(id, link, ip);
    await first.loader.reloadEndpoint(cfg);
    first.maps.setEndpoint(id, [{ ip, endpointId: id, ifIndex: link.ifIndex, identity: cfg.identity, mac: cfg.mac }]);
    first.maps.upsertIPCache({ cidr: `${ip}/32`, identity: cfg.identity });
    first.maps.setPolicy(id, allowAll);
  }
  t.same(await first.maps.flush(), []);
  await first.stop(); // as a crash leaves it: everything pinned and attached

  const dp = new BpfDatapath(first.cfg, silentLogger());
  dp.start();
  t.teardown(() => dp.stop());
  const liveProgs = endpointPrograms(live.ifIndex);
  t.same(await dp.removeStale([{ id: 70, ips: ['10.80.0.70'] }]), [71], 'endpoint 71 was not restored');
  const root = dp.cfg.bpfRoot;
  const lxc = openLxcMap(root);
  const ipc = openIPCacheMap(root);
  t.teardown(() => [lxc, ipc].forEach((m) => m.close()));
  t.same(lxc.entries().map(([k, v]) => [k, v.endpointId]), [['10.80.0.70', 70]], 'cellium_lxc keeps the live entry only');
  t.equal(ipc.get('10.80.0.70/32')?.identity, 70170, "the live endpoint's ipcache entry stays");
  t.equal(ipc.get('10.80.0.71/32'), undefined, "the stale one's is gone");
  t.notOk(existsSync(policyMapPath(root, 71)), "its policy map is unpinned");
  t.ok(existsSync(policyMapPath(root, 70)), 'the live policy map stays');
  // its pod must not run on with no program at all: the interface its programs guarded is deleted
  t.notOk(existsSync(`/sys/class/net/${stale.ifName}`), `the stale endpoint's interface ${stale.ifName} is deleted (its pod is cut off, not left unenforced)`);
  t.ok(existsSync(`/sys/class/net/${live.ifName}`), "the live endpoint's interface stays");
  t.same(endpointPrograms(live.ifIndex), liveProgs, 'the live programs are the very same');
  const reused = openPolicyMap(root, 71);
  t.teardown(() => reused.close());
  t.same(reused.entries(), [], 'a new endpoint taking ID 71 starts from an empty policy map, not the stale allow-all');
});

t.test('restore step 2 prunes what nobody desires but keeps the entries of live endpoints', { skip }, async (t) => {
  const dp = startedDatapath(t);
  const lxc = openLxcMap(dp.cfg.bpfRoot);
  const ipc = openIPCacheMap(dp.cfg.bpfRoot);
  t.teardown(() => [lxc, ipc].forEach((m) => m.close()));
  // endpoint 80 was restored but its regeneration failed before writing desired state
  lxc.set('10.80.1.80', { ifIndex: 3, identity: 70180, endpointId: 80, mac: '02:00:00:00:00:80' });
  ipc.set('10.80.1.80/32', { identity: 70180, flags: 0 });
  ipc.set('10.80.1.99/32', { identity: 70199, flags: 0 });
  dp.maps.setPolicy(81, [{ identity: 7, direction: 'egress', protocol: Proto.TCP, port: 443, deny: false }]);
  t.same(await dp.maps.flush(), []);
  t.equal(await dp.prune(), undefined, 'no prune before restore is done');
  await dp.restoreDone([{ id: 80, ips: ['10.80.1.80'] }, { id: 81, ips: [] }]);
  t.equal(lxc.get('10.80.1.80')?.endpointId, 80, "the live endpoint's lxc entry is kept");
  t.equal(ipc.get('10.80.1.80/32')?.identity, 70180, 'and its ipcache entry');
  t.equal(ipc.get('10.80.1.99/32'), undefined, 'an entry nobody desires is gone');
  t.ok(await dp.prune(), 'pruning runs from now on');
});

function ip(...args: string[]): void {
  execFileSync('ip', args);
}
