// Privileged: the BPF datapath's loader. rewrite+load attaches bpf_lxc with the endpoint's
// constants, bound to the policy map the reconciler writes (at the configured size); isLoaded
// answers from the kernel (constants and map binding); unload detaches and unpins; after restore,
// programs and maps of endpoints that no longer exist are removed and live ones are kept. These are
// the per-endpoint programs' (--bpf-lxc-program=per-endpoint); shared-program.test.ts has the shared one's.
import t from 'tap';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { BpfMap } from '../../src/bpf/index.js';
import { endpointPrograms, lxcLinkPath, programMapIds } from '../../src/cells/datapath-bpf/lxc/index.js';
import { policyMapName, type EndpointDatapathConfig } from '../../src/cells/datapath/index.js';
import { BpfDatapath } from '../../src/cells/datapath-bpf/index.js';
import { silentLogger } from '../../src/hive/index.js';
import { hostVeth, skipUnlessBpf, startedDatapath } from './helpers.js';

const skip = skipUnlessBpf();

t.test('load, check, reload with new constants, unload (tcx)', { skip }, async (t) => {
  const dp = startedDatapath(t, { bpfPolicyMapMax: 1024, bpfAttachMode: 'tcx', bpfLxcProgram: 'per-endpoint' });
  const link = hostVeth(t);
  const cfg: EndpointDatapathConfig = { id: 321, identity: 70000, ipv4: '10.78.0.5', ifName: link.ifName, ifIndex: link.ifIndex, mac: '02:00:00:00:03:21', hostMac: link.mac };
  t.notOk(await dp.loader.isLoaded(cfg), 'nothing is loaded at first');
  await dp.loader.reloadEndpoint(cfg);
  t.ok(await dp.loader.isLoaded(cfg), 'loaded with this configuration');
  t.notOk(await dp.loader.isLoaded({ ...cfg, identity: 70001 }), 'another identity is not what is loaded');

  const progs = endpointPrograms(link.ifIndex);
  t.equal(progs.from_container.tcx.length + (progs.from_container.legacy ? 1 : 0), 1, 'one program at tc ingress');
  const policy = BpfMap.openPinned(join(dp.cfg.bpfRoot, policyMapName(321)));
  t.teardown(() => policy.close());
  t.equal(policy.info.maxEntries, 1024, 'the policy map has the configured size');
  const progId = progs.from_container.tcx[0] ?? progs.from_container.legacy!;
  t.ok(programMapIds(progId).includes(policy.info.id), 'the program uses the pinned policy map the reconciler writes');

  await dp.loader.reloadEndpoint({ ...cfg, identity: 70001 });
  t.ok(await dp.loader.isLoaded({ ...cfg, identity: 70001 }), 'reloaded with the new identity');
  const after = endpointPrograms(link.ifIndex);
  t.equal(after.to_container.tcx.length + (after.to_container.legacy ? 1 : 0), 1, 'still exactly one program at tc egress after the reload');
  t.equal(dp.loader.loads, 2);

  await dp.loader.unloadEndpoint(321, link.ifName);
  const gone = endpointPrograms(link.ifIndex);
  t.same([gone.from_container.tcx, gone.to_container.tcx], [[], []], 'no tcx program left');
  t.notOk(gone.from_container.legacy ?? gone.to_container.legacy, 'no legacy filter left');
  t.notOk(existsSync(join(dp.cfg.bpfRoot, policyMapName(321))), 'the policy map pin is gone');
  t.notOk(existsSync(lxcLinkPath(dp.cfg.bpfRoot, 321, 'from_container')), 'the link pins are gone');
  await t.resolves(dp.loader.unloadEndpoint(321, 'lxcgone000'), 'unloading again, or with the interface gone, is fine');
});

for (const mode of ['legacy', 'tcx'] as const) {
  t.test(`after restore, programs and maps of endpoints that no longer exist are removed (${mode})`, { skip }, async (t) => {
    const dp = startedDatapath(t, { bpfAttachMode: mode, bpfLxcProgram: 'per-endpoint' });
    const live = hostVeth(t);
    const stale = hostVeth(t);
    const base = { identity: 70002, hostMac: live.mac, mac: '02:00:00:00:00:01' };
    for (const [id, link] of [[10, live], [11, stale]] as const) {
      await dp.loader.reloadEndpoint({ ...base, id, ifName: link.ifName, ifIndex: link.ifIndex });
      dp.maps.setEndpoint(id, [{ ip: `10.79.0.${id}`, endpointId: id, ifIndex: link.ifIndex, identity: 70002, mac: base.mac }]);
    }
    t.same(await dp.maps.flush(), []);
    const attached = (ifIndex: number): number => {
      const p = endpointPrograms(ifIndex);
      return p.from_container.tcx.length + p.to_container.tcx.length + (p.from_container.legacy ? 1 : 0) + (p.to_container.legacy ? 1 : 0);
    };
    t.equal(attached(stale.ifIndex), 2, 'both endpoints start with their two programs');
    t.same(await dp.restoreDone([{ id: 10, ips: ['10.79.0.10'] }]), [11], 'endpoint 11 is not live: removed');
    t.ok(existsSync(join(dp.cfg.bpfRoot, policyMapName(10))), 'the live endpoint keeps its policy map');
    t.equal(attached(live.ifIndex), 2, 'and its programs');
    t.notOk(existsSync(join(dp.cfg.bpfRoot, policyMapName(11))), 'the stale policy map is gone');
    t.equal(attached(stale.ifIndex), 0, 'the stale programs are detached');
  });
}

t.test('--bpf-attach-mode=legacy: clsact filters; switching from tcx leaves one program per hook', { skip }, async (t) => {
  const tcx = startedDatapath(t, { bpfAttachMode: 'tcx', bpfLxcProgram: 'per-endpoint' });
  const link = hostVeth(t);
  const cfg: EndpointDatapathConfig = { id: 77, identity: 70003, ipv4: '10.78.0.77', ifName: link.ifName, ifIndex: link.ifIndex, mac: '02:00:00:00:00:77', hostMac: link.mac };
  await tcx.loader.reloadEndpoint(cfg);
  t.equal(endpointPrograms(link.ifIndex).from_container.tcx.length, 1, 'attached with a tcx link first');
  await tcx.stop();
  const legacy = new BpfDatapath({ ...tcx.cfg, bpfAttachMode: 'legacy' }, silentLogger());
  legacy.start();
  t.teardown(() => legacy.stop());
  await legacy.loader.reloadEndpoint({ ...cfg, identity: 70004 });
  const progs = endpointPrograms(link.ifIndex);
  t.same([progs.from_container.tcx, progs.to_container.tcx], [[], []], 'the tcx links are gone');
  t.ok(progs.from_container.legacy && progs.to_container.legacy, 'a clsact filter at each hook');
  t.notOk(existsSync(lxcLinkPath(tcx.cfg.bpfRoot, 77, 'from_container')), 'and so are their pins');
  t.ok(await legacy.loader.isLoaded({ ...cfg, identity: 70004 }), 'isLoaded reads the filters\' programs');
  await legacy.loader.unloadEndpoint(77, link.ifName);
  const gone = endpointPrograms(link.ifIndex);
  t.notOk(gone.from_container.legacy ?? gone.to_container.legacy, 'unload removes the filters');
});
