// Privileged: BpfObject.loadAsync loads off the JS thread (the object is busy until it settles),
// and loadEndpointProgram attaches both bpf_lxc programs with the endpoint's constants in both
// attach modes.
import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import { BpfObject, objectPath } from '../../src/bpf/index.js';
import { policyMapPath } from '../../src/maps/index.js';
import { lxcConstants, loadEndpointProgram, programConstants, unloadEndpointProgram } from '../../src/cells/datapath-bpf/lxc/index.js';
import { ip, ipJson, uniq } from '../root-netlink/netns.js';
import { skipUnlessBpf, testBpfRoot } from '../bpf/fixtures/topology.js';

const skip = skipUnlessBpf();

t.test('loadAsync: busy while loading, loaded after', { skip }, async (t) => {
  const { root, remove } = testBpfRoot();
  t.teardown(remove);
  const obj = BpfObject.open(readFileSync(objectPath('bpf_lxc')), { name: 'bpf_lxc', pinRoot: root });
  t.teardown(() => obj.close());
  const loading = obj.loadAsync();
  t.throws(() => obj.programFd('from_container'), { code: 'EBUSY' }, 'the object is the worker\'s until the load settles');
  t.throws(() => obj.close(), { code: 'EBUSY' }, 'and cannot be closed meanwhile');
  await loading;
  t.ok(obj.isLoaded);
  for (const prog of ['from_container', 'to_container']) t.ok(obj.programFd(prog) > 0, `${prog} is loaded`);
  await t.rejects(obj.loadAsync(), { code: 'EALREADY' }, 'a second load is refused');
});

t.test('loadEndpointProgram: both programs attached with the endpoint\'s constants', { skip }, async (t) => {
  const { root, remove } = testBpfRoot();
  t.teardown(remove);
  const ifName = `lxca${uniq()}`;
  ip('link', 'add', ifName, 'type', 'veth', 'peer', 'name', `pa${ifName.slice(4)}`);
  t.teardown(() => ip('link', 'del', ifName));
  const [link] = ipJson<{ ifindex: number; address: string }>('link', 'show', ifName);
  const cfg = { id: 42, identity: 70042, ipv4: '10.80.0.42', ifName, ifIndex: link!.ifindex, mac: '02:00:00:00:00:42', hostMac: link!.address };
  for (const mode of ['legacy', 'tcx'] as const) {
    const r = await loadEndpointProgram(cfg, { bpfRoot: root, mode });
    t.equal(r.attachments.from_container.mode, mode, `${mode}: attached`);
    for (const a of Object.values(r.attachments)) {
      const have = programConstants(a.progId)!;
      t.same(have.endpoint_identity, lxcConstants(cfg).endpoint_identity, `${mode}: program ${a.progId} carries the endpoint's identity`);
    }
    t.ok(existsSync(policyMapPath(root, 42)), `${mode}: the policy map is pinned`);
    unloadEndpointProgram(42, cfg.ifIndex, { bpfRoot: root });
  }
});
