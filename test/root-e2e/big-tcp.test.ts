// BIG TCP end to end, as root: an agent with --enable-ipv4-big-tcp --enable-ipv6-big-tcp and a
// --big-tcp-device (a veth of this test's own with large sizes), an ADD through the shim, and the
// sizes read back from the kernel on both ends of the pod's veth; a second ADD without BIG TCP keeps
// the kernel defaults.
import t from 'tap';
import { hostIfName } from '../../src/cells/cni-server/index.js';
import { Netlink } from '../../src/netlink/index.js';
import { cni, conf, netns, startAgent, uniq } from './agent.js';
import { needs } from '../needs.js';

const skip = needs('root', 'creates network namespaces, veth pairs and host routes');

const BIG = 196608;

t.test('both ends of the veth get the host device sizes', { skip }, async (t) => {
  const host = Netlink.open();
  t.teardown(() => host.close());
  const dev = `btd${uniq().slice(-8)}`;
  await host.createVeth({ name: dev, peerName: `${dev}p` });
  t.teardown(() => host.deleteLink(dev).then(() => undefined));
  const probe = await host.getLink(dev);
  const v4 = probe!.gsoIpv4MaxSize !== undefined;
  await host.setLink(dev, { gsoMaxSize: BIG, groMaxSize: BIG, ...(v4 ? { gsoIpv4MaxSize: BIG, groIpv4MaxSize: BIG } : {}) });

  const agent = await startAgent(t, '10.221.0.0/24', { config: { 'enable-ipv4-big-tcp': true, 'enable-ipv6-big-tcp': true, 'big-tcp-device': dev } });
  const pod = netns(t, 'bigtcp');
  const id = `bigtcp${uniq()}`;
  const add = await cni('ADD', { containerId: id, netns: pod.path }, conf(agent));
  t.equal(add.code, 0, add.stdout);
  t.teardown(() => cni('DEL', { containerId: id, netns: pod.path }, conf(agent)).then(() => undefined));

  const want = { gsoMaxSize: BIG, groMaxSize: BIG, ...(v4 ? { gsoIpv4MaxSize: BIG, groIpv4MaxSize: BIG } : {}) };
  t.match(await host.getLink(hostIfName(id, 'eth0')), want, 'host side: the kernel reports the sizes');
  const inPod = Netlink.open(pod.path);
  t.teardown(() => inPod.close());
  t.match(await inPod.getLink('eth0'), { ...want, up: true }, 'pod side: the kernel reports the sizes');
  if (!v4) t.comment('kernel before 6.3: no IPv4 sizes to check');

  const plain = await startAgent(t, '10.221.1.0/24');
  const pod2 = netns(t, 'bigtcp');
  const id2 = `plain${uniq()}`;
  t.equal((await cni('ADD', { containerId: id2, netns: pod2.path }, conf(plain))).code, 0);
  t.teardown(() => cni('DEL', { containerId: id2, netns: pod2.path }, conf(plain)).then(() => undefined));
  const inPod2 = Netlink.open(pod2.path);
  t.teardown(() => inPod2.close());
  t.equal((await inPod2.getLink('eth0'))!.gsoMaxSize, 65536, 'without BIG TCP the kernel default stays');
});
