// GSO/GRO maximums (BIG TCP) through setLink and a batch, read back from the kernel by getLink and
// by `ip -d -j link`: both ends of a veth, each in its own namespace.
import t from 'tap';
import { applyNetlinkSteps, Netlink } from '../../src/netlink/index.js';
import { hostAndPod, ipJson } from './netns.js';
import { needs } from '../needs.js';

const skip = needs('root', 'creates network namespaces and veth pairs');

const BIG = 196608;

t.test('offload sizes are set in a batch and read back on both ends', { skip }, async (t) => {
  const { id, hostNs, podNs } = hostAndPod(t, 'gso');
  const host = Netlink.open(hostNs.path);
  t.teardown(() => host.close());
  const hostName = `lxc${id}`;
  const before = await host.createVeth({ name: hostName, peerName: 'eth0', peerNetns: podNs.path });
  t.type(before.gsoMaxSize, 'number', 'the kernel reports gso_max_size');
  t.type(before.groMaxSize, 'number', 'and gro_max_size');
  const v4 = before.gsoIpv4MaxSize !== undefined;
  const sizes = { gsoMaxSize: BIG, groMaxSize: BIG, ...(v4 ? { gsoIpv4MaxSize: BIG, groIpv4MaxSize: BIG } : {}) };

  await applyNetlinkSteps(hostNs.path, [{ op: 'setLink', name: hostName, change: sizes }]);
  await applyNetlinkSteps(podNs.path, [{ op: 'setLink', name: 'eth0', change: { ...sizes, up: true } }]);

  const hostSide = await host.getLink(hostName);
  t.match(hostSide, sizes, 'host side, read back through netlink');
  const pod = Netlink.open(podNs.path);
  t.teardown(() => pod.close());
  t.match(await pod.getLink('eth0'), { ...sizes, up: true }, 'pod side, read back through netlink');
  const [shown] = ipJson<Record<string, number>>('-n', podNs.name, '-d', 'link', 'show', 'eth0');
  t.equal(shown!.gso_max_size, BIG, 'ip -d link agrees (gso_max_size)');
  t.equal(shown!.gro_max_size, BIG, 'ip -d link agrees (gro_max_size)');
  if (!v4) t.comment('this kernel has no IFLA_GSO_IPV4_MAX_SIZE (before 6.3): the IPv4 sizes were not tried');

  // A size above the device's TSO limit is the kernel's EINVAL, named by the step.
  const err = await applyNetlinkSteps(hostNs.path, [{ op: 'setLink', name: hostName, change: { gsoMaxSize: 0x7fffffff } }]).then(() => undefined, (e: unknown) => e);
  t.match(err, { step: 0, code: 'EINVAL', message: /gso_max_size/ }, 'an impossible size is refused, with the kernel’s reason');
});
