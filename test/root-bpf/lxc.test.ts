// bpf_lxc on a real veth (root): load with per-endpoint constants, reload with others (atomic
// replace of the pinned tcx links), the legacy clsact mode, programAttached asking either mechanism
// first, programs surviving the loader (pins),
// traffic checks (allow/deny/missing entries, both directions, L3 and L4), unload and errors.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t, { type Test } from 'tap';
import { TS_LOADER_ARGV } from '../loader/argv.js';
import { DropEventReader } from '../../src/monitor/index.js';
import { BpfError, programAttached, type AttachMode } from '../../src/bpf/index.js';
import { objectPath } from '../../src/bpf/native.js';
import { openIPCacheMap, openPolicyMap, readDropCounters, syncPolicyMap, type PolicyMap } from '../../src/maps/index.js';
import { endpointPrograms, isEndpointLoaded, loadEndpointProgram, lxcLinkPath, pinnedEndpoints, unloadEndpointProgram, type LxcLoadResult } from '../../src/cells/datapath-bpf/lxc/index.js';
import type { EndpointDatapathConfig, PolicyEntry } from '../../src/datapath/types.js';
import { createTopology, exchange, ping, skipUnlessBpf, testBpfRoot, type Topology } from '../bpf/fixtures/topology.js';

const skip = skipUnlessBpf();
const EP = '10.0.0.2';
const HOST = '10.0.0.1';
const A = '10.0.0.10';
const B = '10.0.0.11';

/** The .rodata constants of a loaded program, as bpftool formats them. */
function rodataOf(progId: number): Record<string, unknown> {
  const prog = JSON.parse(execFileSync('bpftool', ['prog', 'show', 'id', String(progId), '-j'], { encoding: 'utf8' })) as { map_ids: number[] };
  for (const id of prog.map_ids) {
    const m = JSON.parse(execFileSync('bpftool', ['map', 'show', 'id', String(id), '-j'], { encoding: 'utf8' })) as { name: string };
    if (!m.name.endsWith('.rodata')) continue;
    const dump = JSON.parse(execFileSync('bpftool', ['map', 'dump', 'id', String(id), '-j'], { encoding: 'utf8' })) as {
      formatted: { value: { '.rodata': Record<string, unknown>[] } };
    }[];
    return Object.assign({}, ...dump[0]!.formatted.value['.rodata']) as Record<string, unknown>;
  }
  throw new Error(`program ${progId} has no .rodata map`);
}

interface Env {
  root: string;
  topo: Topology;
  policy: PolicyMap;
  cfg: (over?: Partial<EndpointDatapathConfig>) => EndpointDatapathConfig;
}

function setup(t: Test): Env {
  const { root, remove } = testBpfRoot();
  t.teardown(remove);
  const topo = createTopology({ ep4: EP, ep6: 'fd00::2', host4: HOST, host6: 'fd00::1', prefix4: 24, prefix6: 64, peers: [A, B] });
  t.teardown(topo.cleanup);
  const ipcache = openIPCacheMap(root);
  ipcache.setMany([[`${HOST}/32`, { identity: 1, flags: 0 }], [`${A}/32`, { identity: 1000, flags: 0 }], [`${B}/32`, { identity: 2000, flags: 0 }]]);
  ipcache.close();
  const policy = openPolicyMap(root, 7);
  t.teardown(() => policy.close());
  const cfg = (over: Partial<EndpointDatapathConfig> = {}): EndpointDatapathConfig => ({
    id: 7, identity: 1111, ipv4: EP, ipv6: 'fd00::2', ifName: topo.hostIf, ifIndex: topo.ifIndex, mac: topo.mac, hostMac: topo.hostMac, ...over,
  });
  return { root, topo, policy, cfg };
}

const allow = (identity: number, direction: 'ingress' | 'egress', protocol = 0, port = 0): PolicyEntry => ({ identity, direction, protocol, port, deny: false });

for (const mode of ['auto', 'legacy'] as AttachMode[]) {
  t.test(`load, reload with other constants, traffic, unload (${mode})`, { skip }, async (t) => {
    const { root, topo, policy, cfg } = setup(t);
    const opts = { bpfRoot: root, netns: topo.hostNsPath, mode };
    const first = await loadEndpointProgram(cfg(), opts);
    t.teardown(() => unloadEndpointProgram(7, topo.ifIndex, { bpfRoot: root, netns: topo.hostNsPath }));
    const want = mode === 'auto' ? 'tcx' : 'legacy';
    t.equal(first.attachments.from_container.mode, want);
    t.equal(first.attachments.to_container.mode, want);
    t.equal(first.attachments.from_container.replaced, false);
    const progs = endpointPrograms(topo.ifIndex, topo.hostNsPath);
    const attachedIds = (p: { tcx: number[]; legacy?: number }): number[] => [...p.tcx, ...(p.legacy ? [p.legacy] : [])];
    t.strictSame(attachedIds(progs.from_container), [first.attachments.from_container.progId], 'from_container alone at tc ingress');
    t.strictSame(attachedIds(progs.to_container), [first.attachments.to_container.progId], 'to_container alone at tc egress');
    t.match(rodataOf(first.attachments.from_container.progId), { endpoint_id: 7, endpoint_identity: 1111, endpoint_ifindex: topo.ifIndex, endpoint_ipv4: [10, 0, 0, 2] });
    if (mode === 'auto') {
      t.ok(existsSync(lxcLinkPath(root, 7, 'from_container')), 'tcx links are pinned');
      t.strictSame(pinnedEndpoints(root), [7]);
    }

    // Empty policy: echo to the host passes, everything else drops.
    const events = DropEventReader.open(root);
    t.teardown(() => events.close());
    events.read();
    t.equal(await ping(topo.podNs, HOST), true, 'ping to the host gateway passes without policy');
    const before = readDropCounters(root).policy!.packets;
    t.equal(await ping(topo.podNs, A), false, 'ping to a peer without policy drops');
    t.ok(readDropCounters(root).policy!.packets > before, 'counted as a policy drop');
    const drop = events.read().find((e) => e.dst === A);
    t.match(drop, {
      reason: 'policy', direction: 'egress', endpointId: 7, protocol: 1, icmpType: 8, src: EP, dst: A, srcIdentity: 1111, dstIdentity: 1000, ifIndex: topo.ifIndex,
    }, 'the drop is reported on the ring buffer');

    // L3 allow both ways for A: ping passes; B still drops.
    syncPolicyMap(policy, [allow(1000, 'egress'), allow(1000, 'ingress')]);
    t.equal(await ping(topo.podNs, A), true, 'L3 allow: egress ping to A passes');
    t.equal(await ping(topo.hostNs, EP, A), true, 'L3 allow: ingress ping from A passes');
    t.equal(await ping(topo.podNs, B), false, 'no entry for B: drops');

    // Reload with other constants: same links, new programs, the policy map kept.
    const second = await loadEndpointProgram(cfg({ identity: 2222 }), opts);
    t.equal(second.attachments.from_container.replaced, true, 'the reload replaced the program');
    t.not(second.attachments.from_container.progId, first.attachments.from_container.progId);
    if (mode === 'auto') t.equal(second.attachments.from_container.linkId, first.attachments.from_container.linkId, 'same tcx link, updated in place');
    t.match(rodataOf(second.attachments.to_container.progId), { endpoint_identity: 2222 });
    t.equal(isEndpointLoaded(cfg({ identity: 2222 }), topo.hostNsPath), true, 'loaded with exactly this configuration');
    t.equal(isEndpointLoaded(cfg({ identity: 1111 }), topo.hostNsPath), false, 'not with the previous one');
    t.equal(isEndpointLoaded(cfg({ identity: 2222, mac: '02:00:00:00:00:99' }), topo.hostNsPath), false, 'a different MAC is a different configuration');
    t.equal(isEndpointLoaded(cfg({ identity: 2222 }), topo.hostNsPath, [], undefined, Buffer.concat([readFileSync(objectPath('bpf_lxc')), Buffer.from('another build')])), false,
      'another build of the object (an upgraded agent) is not this program');
    const after = endpointPrograms(topo.ifIndex, topo.hostNsPath);
    t.strictSame(attachedIds(after.from_container), [second.attachments.from_container.progId], 'only the new program is attached');
    // programAttached (checkAttached's question) asks either mechanism first; the answer is the same
    for (const order of ['legacy', 'tcx', 'auto'] as AttachMode[]) {
      const target = { ifindex: topo.ifIndex, hook: 'ingress' as const, netns: topo.hostNsPath, mode: order };
      t.equal(programAttached(target, second.attachments.from_container.progId), true, `found asking ${order === 'legacy' ? 'the legacy filter' : 'tcx'} first`);
      t.strictSame(programAttached(target, first.attachments.from_container.progId), [second.attachments.from_container.progId], `the replaced program is not found (${order}); what runs is named`);
    }
    t.equal(await ping(topo.podNs, A), true, 'the policy map survived the reload');

    // L4: egress TCP 8080 to A only; ingress TCP 9090 from A only (other direction open for replies).
    syncPolicyMap(policy, [allow(1000, 'egress', 6, 8080), allow(0, 'ingress')]);
    t.equal(await exchange('tcp', topo.podAgent, topo.hostAgent, EP, A, 8080), true, 'egress L4 allow passes');
    t.equal(await exchange('tcp', topo.podAgent, topo.hostAgent, EP, A, 8081), false, 'egress other port drops');
    syncPolicyMap(policy, [allow(1000, 'ingress', 6, 9090), allow(0, 'egress')]);
    t.equal(await exchange('tcp', topo.hostAgent, topo.podAgent, A, EP, 9090), true, 'ingress L4 allow passes');
    t.equal(await exchange('tcp', topo.hostAgent, topo.podAgent, B, EP, 9090), false, 'ingress from another identity drops');
    syncPolicyMap(policy, [allow(0, 'ingress'), { ...allow(1000, 'ingress', 6, 9090), deny: true }, allow(0, 'egress')]);
    const denies = readDropCounters(root)['policy-deny']!.packets;
    t.equal(await exchange('tcp', topo.hostAgent, topo.podAgent, A, EP, 9090), false, 'ingress deny drops');
    t.ok(readDropCounters(root)['policy-deny']!.packets > denies, 'counted as a policy-deny drop');
    t.equal(await exchange('tcp', topo.hostAgent, topo.podAgent, B, EP, 9090), true, 'the wildcard allow still admits B');

    t.equal(unloadEndpointProgram(7, topo.ifIndex, { bpfRoot: root, netns: topo.hostNsPath }), true);
    const gone = endpointPrograms(topo.ifIndex, topo.hostNsPath);
    t.strictSame([attachedIds(gone.from_container), attachedIds(gone.to_container)], [[], []], 'nothing attached after unload');
    t.equal(existsSync(lxcLinkPath(root, 7, 'from_container')), false, 'link pins removed');
    t.equal(isEndpointLoaded(cfg({ identity: 2222 }), topo.hostNsPath), false, 'not loaded after unload');
    t.equal(await ping(topo.podNs, B), true, 'without the program B is reachable');
    t.equal(unloadEndpointProgram(7, topo.ifIndex, { bpfRoot: root, netns: topo.hostNsPath }), false, 'a second unload finds nothing');
  });
}

t.test('programs survive the loading process; another process replaces them through the pins', { skip }, async (t) => {
  const { root, topo, cfg } = setup(t);
  const opts = { bpfRoot: root, netns: topo.hostNsPath };
  const child = join(dirname(fileURLToPath(import.meta.url)), '..', 'bpf', 'fixtures', 'load-child.ts');
  const out = execFileSync(process.execPath, [...TS_LOADER_ARGV, child, JSON.stringify(cfg()), JSON.stringify(opts)], {
    encoding: 'utf8', env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
  });
  t.teardown(() => unloadEndpointProgram(7, topo.ifIndex, opts));
  const first = JSON.parse(out.trim().split('\n').at(-1)!) as LxcLoadResult;
  t.equal(first.attachments.from_container.mode, 'tcx');
  const progs = endpointPrograms(topo.ifIndex, topo.hostNsPath);
  t.strictSame(progs.from_container.tcx, [first.attachments.from_container.progId], 'still attached after the loader exited');
  t.equal(await ping(topo.podNs, A), false, 'and still enforcing (no policy for A)');
  const second = await loadEndpointProgram(cfg({ identity: 3333 }), opts);
  t.equal(second.attachments.from_container.replaced, true, 'this process replaced it through the pinned link');
  t.equal(second.attachments.from_container.linkId, first.attachments.from_container.linkId);
  t.strictSame(endpointPrograms(topo.ifIndex, topo.hostNsPath).from_container.tcx, [second.attachments.from_container.progId]);
});

t.test('two endpoints load the same object with different constants', { skip }, async (t) => {
  const one = setup(t);
  const two = setup(t);
  const a = await loadEndpointProgram(one.cfg({ id: 7, identity: 5001 }), { bpfRoot: one.root, netns: one.topo.hostNsPath });
  t.teardown(() => unloadEndpointProgram(7, one.topo.ifIndex, { bpfRoot: one.root, netns: one.topo.hostNsPath }));
  const b = await loadEndpointProgram(two.cfg({ id: 8, identity: 5002 }), { bpfRoot: two.root, netns: two.topo.hostNsPath });
  t.teardown(() => unloadEndpointProgram(8, two.topo.ifIndex, { bpfRoot: two.root, netns: two.topo.hostNsPath }));
  t.match(rodataOf(a.attachments.from_container.progId), { endpoint_id: 7, endpoint_identity: 5001 });
  t.match(rodataOf(b.attachments.from_container.progId), { endpoint_id: 8, endpoint_identity: 5002 });
  t.match(b.policyMapPath, /cellium_policy_00008$/);
});

t.test('errors carry syscall, errno name and hint', { skip }, async (t) => {
  const { root, cfg } = setup(t);
  const noDev = await loadEndpointProgram(cfg({ ifIndex: 999999 }), { bpfRoot: root, mode: 'tcx' }).then(() => undefined, (e: unknown) => e as BpfError);
  if (!noDev) return t.fail('attaching to a missing interface succeeded');
  t.ok(noDev instanceof BpfError);
  t.equal(noDev.syscall, 'bpf_link_create');
  t.equal(noDev.code, 'ENODEV');
  t.match(noDev.hint, /no such interface/);
  const noObj = await loadEndpointProgram(cfg(), { bpfRoot: root, object: '/nonexistent/bpf_lxc.o' }).then(() => undefined, (e: unknown) => e as BpfError);
  if (!noObj) return t.fail('loading a missing object succeeded');
  t.equal(noObj.code, 'ENOENT');
  t.match(noObj.hint, /npm run build/);
});
