// Privileged: --bpf-lxc-program=shared. One bpf_lxc per node: 200 endpoints run the same two
// programs as 1 (the kernel's count of this agent's programs does not grow), a load is the
// endpoint's entry and policy-map slot plus the attach, a changed identity is an entry rewrite (no
// new program, no reattach), unload removes entry and slot. Across agents on the same BPF root:
// endpoints running per-endpoint programs move to the shared one by an atomic link update (the
// tcx link stays, its program changes), a restart with the same configuration keeps the pinned
// program (nothing verified again), a first load that does not ask what runs there replaces it in
// place (one program per hook, the same tcx links), and a configuration that needs a new program loads it once
// and swaps every endpoint's links.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadAddon, objectPath } from '../../src/bpf/native.js';
import { endpointPrograms, lxcBuildId, lxcLinkPath, sharedProgramPath } from '../../src/cells/datapath-bpf/lxc/index.js';
import { policyMapName, type EndpointDatapathConfig } from '../../src/cells/datapath/index.js';
import { BpfDatapath } from '../../src/cells/datapath-bpf/index.js';
import { silentLogger } from '../../src/hive/index.js';
import { bpfConfig, hostVeth, skipUnlessBpf, startedDatapath } from './helpers.js';

const skip = skipUnlessBpf();

function cfgFor(id: number, link: { ifName: string; ifIndex: number; mac: string }, identity = 70100): EndpointDatapathConfig {
  return { id, identity, ipv4: `10.81.${id >> 8}.${id & 255}`, ifName: link.ifName, ifIndex: link.ifIndex, mac: '02:00:00:00:81:01', hostMac: link.mac };
}

/** Program ids at both hooks of an interface. */
function hookIds(ifIndex: number): number[] {
  const p = endpointPrograms(ifIndex);
  return [...p.from_container.tcx, ...(p.from_container.legacy ? [p.from_container.legacy] : []), ...p.to_container.tcx, ...(p.to_container.legacy ? [p.to_container.legacy] : [])];
}

/** The kernel's loaded programs that use map `mapId` (bpftool prog show). */
function programsUsing(mapId: number): number[] {
  const all = JSON.parse(execFileSync('bpftool', ['prog', 'show', '-j'], { encoding: 'utf8' })) as { id: number; map_ids?: number[] }[];
  return all.filter((p) => p.map_ids?.includes(mapId)).map((p) => p.id).sort((a, b) => a - b);
}

/** The tcx link id pinned for an endpoint's program. */
function linkId(root: string, id: number): number {
  const a = loadAddon();
  const fd = a.objGet(lxcLinkPath(root, id, 'from_container'));
  try {
    return a.linkInfo(fd).id;
  } finally {
    a.close(fd);
  }
}

t.test('200 endpoints run the same two programs as 1; entry rewrites, unload', { skip }, async (t) => {
  const dp = startedDatapath(t, { bpfLxcProgram: 'shared', bpfAttachMode: 'tcx' });
  const ipcache = dp.kernel.ipcache.map.info.id;
  const links = Array.from({ length: 200 }, () => hostVeth(t));
  await dp.loader.reloadEndpoint(cfgFor(1, links[0]!));
  const one = programsUsing(ipcache);
  t.equal(one.length, 2, 'with 1 endpoint: two programs (from_container, to_container)');
  await Promise.all(links.slice(1).map((l, i) => dp.loader.reloadEndpoint(cfgFor(i + 2, l))));
  t.strictSame(programsUsing(ipcache), one, 'with 200 endpoints: the same two programs');
  t.equal(dp.loader.shared!.loads, 1, 'verified once');
  t.ok(links.every((l) => hookIds(l.ifIndex).join() === one.join()), 'every interface runs them, nothing else');
  t.equal(dp.kernel.endpoints.entries().length, 200, 'one cellium_endpoints entry per endpoint');
  const cfg = cfgFor(7, links[6]!);
  t.ok(await dp.loader.isLoaded(cfg), 'isLoaded: the program, the entry and the policy map slot');
  t.equal(dp.kernel.policySlots.get(7), dp.kernel.policy(7).map.info.id, 'slot 7 holds the pinned cellium_policy_00007');
  t.notOk(await dp.loader.isLoaded({ ...cfg, identity: 70101 }), 'another identity is not loaded');
  const link = linkId(dp.cfg.bpfRoot, 7);
  await dp.loader.reloadEndpoint({ ...cfg, identity: 70101 });
  t.ok(await dp.loader.isLoaded({ ...cfg, identity: 70101 }), 'the new identity is loaded: the entry was rewritten');
  t.equal(linkId(dp.cfg.bpfRoot, 7), link, 'the same link, nothing reattached');
  t.equal(dp.kernel.endpoints.get(links[6]!.ifIndex)?.identity, 70101, 'the entry names the new identity');
  t.equal(await dp.loader.checkAttached(7), undefined, 'checkAttached: all in place');

  await dp.loader.unloadEndpoint(7, links[6]!.ifName);
  t.strictSame(hookIds(links[6]!.ifIndex), [], 'unload detaches');
  t.equal(dp.kernel.endpoints.get(links[6]!.ifIndex), undefined, 'and removes the entry');
  t.equal(dp.kernel.policySlots.get(7), undefined, 'and the slot');
  t.notOk(existsSync(join(dp.cfg.bpfRoot, policyMapName(7))), 'and the policy map pin');
  t.strictSame(programsUsing(ipcache), one, 'the shared program stays for the others');

  t.same(await dp.restoreDone(Array.from({ length: 100 }, (_, i) => ({ id: i + 1, ips: [] }))), Array.from({ length: 100 }, (_, i) => i + 101), 'restore: endpoints 101..200 are stale');
  t.equal(dp.kernel.endpoints.entries().length, 99, 'their entries are gone (1..100 but 7 stay)');
  t.strictSame(dp.kernel.policySlots.ids(), Array.from({ length: 100 }, (_, i) => i + 1).filter((id) => id !== 7), 'and their slots');
  t.strictSame(hookIds(links[150]!.ifIndex), [], 'and their programs are detached');
});

for (const mode of ['tcx', 'legacy'] as const) {
  t.test(`upgrade from per-endpoint programs, restart, configuration change (${mode})`, { skip }, async (t) => {
    const cfgs = bpfConfig(t, { bpfAttachMode: mode });
    const links = Array.from({ length: 3 }, () => hostVeth(t));
    const eps = links.map((l, i) => cfgFor(i + 1, l));
    const start = (over: Partial<typeof cfgs>, ctTimeouts?: { tcp: number; any: number; syn: number; close: number }): BpfDatapath => {
      const dp = new BpfDatapath({ ...cfgs, ...over }, silentLogger(), ctTimeouts ? { ctTimeouts } : {});
      dp.start();
      return dp;
    };
    const old = start({ bpfLxcProgram: 'per-endpoint' });
    for (const c of eps) await old.loader.reloadEndpoint(c);
    const perEndpoint = eps.map((c) => hookIds(c.ifIndex));
    t.equal(new Set(perEndpoint.flat()).size, 6, 'the previous release: two programs per endpoint');
    const links0 = mode === 'tcx' ? eps.map((c) => linkId(cfgs.bpfRoot, c.id)) : [];
    await old.stop();

    const next = start({ bpfLxcProgram: 'shared' });
    for (const c of eps) t.notOk(await next.loader.isLoaded(c), `endpoint ${c.id}: its per-endpoint program is not the shared one`);
    for (const c of eps) await next.loader.reloadEndpoint(c);
    const shared = next.loader.shared!.ids!;
    t.ok(eps.every((c) => hookIds(c.ifIndex).join() === [shared.from_container, shared.to_container].join()), 'every endpoint runs the shared program, one per hook');
    if (mode === 'tcx') t.strictSame(eps.map((c) => linkId(cfgs.bpfRoot, c.id)), links0, 'by an update of the same tcx links (atomic)');
    t.ok(existsSync(sharedProgramPath(cfgs.bpfRoot, 'from_container')), 'the shared program is pinned');
    await next.stop();

    const again = start({ bpfLxcProgram: 'shared' });
    for (const c of eps) t.ok(await again.loader.isLoaded(c), `restart: endpoint ${c.id} is loaded as it was`);
    t.equal(again.loader.shared!.loads, 0, 'restart: the pinned program is kept, nothing verified again');
    t.strictSame(again.loader.shared!.ids, shared, 'the same program ids');
    await again.stop();

    // a first load by a loader that never attached these endpoints (no isLoaded before it): it
    // attaches without asking the kernel what runs there, and the attach replaces it in place
    const fresh = start({ bpfLxcProgram: 'shared' });
    for (const c of eps) await fresh.loader.reloadEndpoint(c);
    t.ok(eps.every((c) => hookIds(c.ifIndex).join() === [shared.from_container, shared.to_container].join()), 'a first load over the running program: still one program per hook');
    if (mode === 'tcx') t.strictSame(eps.map((c) => linkId(cfgs.bpfRoot, c.id)), links0, 'by an update of the same tcx links');
    for (const c of eps) t.equal(await fresh.loader.checkAttached(c.id), undefined, `endpoint ${c.id}: checkAttached finds it in place`);
    await fresh.stop();

    const changed = start({ bpfLxcProgram: 'shared' }, { tcp: 7000, any: 50, syn: 30, close: 5 });
    for (const c of eps) t.notOk(await changed.loader.isLoaded(c), `new conntrack lifetimes: endpoint ${c.id} needs the new program`);
    await Promise.all(eps.map((c) => changed.loader.reloadEndpoint(c)));
    t.equal(changed.loader.shared!.loads, 1, 'the configuration change loads the program once');
    const swapped = changed.loader.shared!.ids!;
    t.not(swapped.from_container, shared.from_container, 'a new program');
    t.ok(eps.every((c) => hookIds(c.ifIndex).join() === [swapped.from_container, swapped.to_container].join()), 'every endpoint\'s links were swapped to it');
    if (mode === 'tcx') t.strictSame(eps.map((c) => linkId(cfgs.bpfRoot, c.id)), links0, 'still the same links');
    await changed.stop();

    // an upgrade that changes only the program's code (same constants, same maps): the pinned
    // program of the other build is replaced, never kept
    const dir = mkdtempSync(join(tmpdir(), 'cellium-lxc-build-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const otherBuild = join(dir, 'bpf_lxc.o');
    writeFileSync(otherBuild, Buffer.concat([readFileSync(objectPath('bpf_lxc')), Buffer.from('another build')]));
    t.not(lxcBuildId(otherBuild).toString('hex'), lxcBuildId().toString('hex'), 'the two objects are two builds');
    const lifetimes = { tcp: 7000, any: 50, syn: 30, close: 5 };
    const upgraded = new BpfDatapath({ ...cfgs, bpfLxcProgram: 'shared' }, silentLogger(), { ctTimeouts: lifetimes, lxcObject: otherBuild });
    upgraded.start();
    for (const c of eps) t.notOk(await upgraded.loader.isLoaded(c), `another build: endpoint ${c.id} needs the new program`);
    await Promise.all(eps.map((c) => upgraded.loader.reloadEndpoint(c)));
    t.equal(upgraded.loader.shared!.loads, 1, 'the new build is loaded once');
    const rebuilt = upgraded.loader.shared!.ids!;
    t.not(rebuilt.from_container, swapped.from_container, 'a new program');
    t.ok(eps.every((c) => hookIds(c.ifIndex).join() === [rebuilt.from_container, rebuilt.to_container].join()), 'every endpoint runs the new build');
    await upgraded.stop();
  });
}
