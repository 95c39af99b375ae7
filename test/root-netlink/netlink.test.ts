// The netlink addon against the real kernel: a "host" and a "pod" network namespace, a veth between
// them, the pod side moved and renamed to eth0, addresses, routes, a static neighbour and sysctls,
// all checked with `ip -j`; then deletion. Also errors (op, interface, errno name).
import t from 'tap';
import { Netlink, NetlinkError, withNetlink, type LinkInfo } from '../../src/netlink/index.js';
import { readSysctl } from '../../src/netlink/sysctl.js';
import { createNetns, hostAndPod, ip, ipJson, uniq } from './netns.js';
import { needs } from '../needs.js';

const skip = needs('root', 'creates network namespaces and veth pairs');

interface IpLink {
  ifname: string;
  mtu: number;
  address: string;
  flags: string[];
  operstate: string;
}
interface IpAddr {
  addr_info: Array<{ family: string; local: string; prefixlen: number }>;
}
interface IpRoute {
  dst: string;
  gateway?: string;
  dev: string;
  scope?: string;
  flags: string[];
}
interface IpNeigh {
  dst: string;
  lladdr: string;
  state: string[];
}

t.test('host namespace reads', { skip }, async (t) => {
  const nl = Netlink.open();
  t.teardown(() => nl.close());
  const lo = await nl.getLink('lo');
  t.ok(lo, 'lo exists');
  t.equal(lo?.index, 1);
  t.equal(lo?.up, true);
  t.equal(await nl.getLink(`nope${uniq()}`), undefined, 'a missing link is undefined');
  const links = await nl.listLinks();
  t.ok(links.some((l) => l.name === 'lo'), 'listLinks includes lo');
  t.ok((await nl.listAddresses('lo')).some((a) => a.address === '127.0.0.1' && a.prefixLength === 8));
  t.equal(await nl.readSysctl('net.ipv4.conf.lo.forwarding'), await readSysctl('net/ipv4/conf/lo/forwarding'));
});

t.test('veth into a pod namespace, configured like a CNI ADD', { skip }, async (t) => {
  const { id, hostNs, podNs } = hostAndPod(t, 'clnl');
  const hostIf = `lxc${id}`;
  const tmpIf = `tmp${id}`;
  const podIp = '198.51.100.7';
  const gw = '198.51.100.1';

  const host = Netlink.open(hostNs.path);
  t.teardown(() => host.close());
  t.equal(host.netns, hostNs.path);
  const created: LinkInfo = await host.createVeth({ name: hostIf, peerName: tmpIf, mtu: 1400, mac: '02:00:00:aa:bb:01' });
  t.match(created, { name: hostIf, mtu: 1400, kind: 'veth', mac: '02:00:00:aa:bb:01', up: false });
  t.ok((await host.getLink(tmpIf))?.index, 'the peer starts in the same namespace');
  await host.moveToNetns(tmpIf, podNs.path, 'eth0');
  t.equal(await host.getLink(tmpIf), undefined, 'the peer left the host namespace');
  await host.setUp(hostIf);
  await host.setMtu(hostIf, 1450);

  await withNetlink(podNs.path, async (pod) => {
    const eth0 = await pod.getLink('eth0');
    t.match(eth0, { name: 'eth0', kind: 'veth', mtu: 1400, peerIndex: created.index });
    await pod.setMtu('eth0', 1450);
    await pod.setUp('lo');
    await pod.setUp('eth0');
    await pod.addAddress('eth0', `${podIp}/32`);
    await pod.addAddress('eth0', '2001:db8::7/128', { noDad: true });
    await pod.addRoute({ dst: gw, dev: 'eth0', scope: 'link' });
    await pod.addRoute({ dst: 'default', gateway: gw, dev: 'eth0' });
    await pod.addRoute({ dst: 'default', gateway: '2001:db8::1', dev: 'eth0', onlink: true });
    await pod.addNeighbor('eth0', gw, created.mac);
    await pod.writeSysctl('net.ipv4.conf.eth0.rp_filter', 0);

    t.same((await pod.listAddresses('eth0')).filter((a) => a.family === 4).map((a) => `${a.address}/${a.prefixLength}`), [`${podIp}/32`]);
    const routes = await pod.listRoutes({ family: 4 });
    t.ok(routes.some((r) => r.dst === `${gw}/32` && r.scope === 253 && !r.gateway), 'link-scope host route to the gateway');
    t.ok(routes.some((r) => r.dst === '0.0.0.0/0' && r.gateway === gw && r.ifindex === eth0?.index), 'default route via the gateway');
    t.ok((await pod.listRoutes({ family: 6 })).some((r) => r.dst === '::/0' && r.onlink), 'onlink IPv6 default route');
    const neigh = (await pod.listNeighbors('eth0')).find((n) => n.address === gw);
    t.match(neigh, { mac: created.mac, permanent: true });
    t.equal(await pod.readSysctl('net/ipv4/conf/eth0/rp_filter'), '0');
  });

  // The kernel's view, through ip -j.
  const [podLink] = ipJson<IpLink>('-n', podNs.name, 'link', 'show', 'eth0');
  t.match(podLink, { ifname: 'eth0', mtu: 1450 });
  t.ok(podLink.flags.includes('UP'), 'eth0 is up');
  const [hostLink] = ipJson<IpLink>('-n', hostNs.name, 'link', 'show', hostIf);
  t.match(hostLink, { ifname: hostIf, mtu: 1450, address: '02:00:00:aa:bb:01' });
  t.ok(hostLink.flags.includes('LOWER_UP'), 'both sides up: carrier on the host side');
  const [addrs] = ipJson<IpAddr>('-n', podNs.name, 'addr', 'show', 'dev', 'eth0');
  t.ok(addrs.addr_info.some((a) => a.local === podIp && a.prefixlen === 32), 'IPv4 address');
  t.ok(addrs.addr_info.some((a) => a.local === '2001:db8::7' && a.prefixlen === 128), 'IPv6 address');
  const routes4 = ipJson<IpRoute>('-n', podNs.name, 'route', 'show');
  t.match(routes4, [{ dst: 'default', gateway: gw, dev: 'eth0' }, { dst: gw, dev: 'eth0', scope: 'link' }]);
  const [route6] = ipJson<IpRoute>('-n', podNs.name, '-6', 'route', 'show', 'default');
  t.match(route6, { dst: 'default', gateway: '2001:db8::1', dev: 'eth0' });
  t.ok(route6.flags.includes('onlink'), 'onlink flag');
  const [neigh] = ipJson<IpNeigh>('-n', podNs.name, 'neigh', 'show', 'dev', 'eth0');
  t.match(neigh, { dst: gw, lladdr: '02:00:00:aa:bb:01', state: ['PERMANENT'] });
  t.equal(ip('netns', 'exec', podNs.name, 'cat', '/proc/sys/net/ipv4/conf/eth0/rp_filter').trim(), '0', 'sysctl set inside the pod namespace');

  // Deleting eth0 inside the pod namespace takes the host side with it; a second delete is a no-op.
  await withNetlink(podNs.path, async (pod) => {
    t.equal(await pod.deleteLink('eth0'), true);
    t.equal(await pod.deleteLink('eth0'), false, 'deleting again reports false');
  });
  t.same(ipJson('-n', hostNs.name, 'link', 'show', 'type', 'veth'), [], 'no veth left in the host namespace');
});

t.test('veth created with its peer directly in the pod namespace', { skip }, async (t) => {
  const { id, hostNs, podNs } = hostAndPod(t, 'clnd');
  await withNetlink(hostNs.path, async (host) => {
    // The host namespace already has an eth0: the peer is named in its own namespace, so no clash.
    await host.createVeth({ name: 'eth0', peerName: `x${id}` });
    const hostSide = await host.createVeth({ name: `lxc${id}`, peerName: 'eth0', peerNetns: podNs.path, mtu: 1500 });
    t.equal((await host.getLink('eth0'))?.peerIndex, (await host.getLink(`x${id}`))?.index, 'the host eth0 is untouched');
    t.not(hostSide.linkNetnsId, -1, 'the host side knows its peer lives in another namespace');
  });
  const [podLink] = ipJson<IpLink>('-n', podNs.name, 'link', 'show', 'eth0');
  t.match(podLink, { ifname: 'eth0', mtu: 1500 });
});

t.test('errors name the operation, the interface and the errno', { skip }, async (t) => {
  const id = uniq();
  const ns = createNetns(`clnl-x-${id}`);
  t.teardown(ns.remove);
  const nl = Netlink.open(ns.path);
  t.teardown(() => nl.close());
  await nl.createVeth({ name: `a${id}`, peerName: `b${id}` });
  await t.rejects(nl.createVeth({ name: `a${id}`, peerName: `c${id}` }), { name: 'NetlinkError', op: 'createVeth', ifname: `a${id}`, code: 'EEXIST', errno: 17 });
  await t.rejects(nl.setUp(`z${id}`), { op: 'setLink', ifname: `z${id}`, code: 'ENODEV' });
  await t.rejects(nl.addAddress(`a${id}`, '300.1.1.1/24'), { op: 'addAddress', code: 'EINVAL', message: /300\.1\.1\.1/ });
  await t.rejects(nl.addAddress(`a${id}`, '198.51.100.9/33'), { code: 'EINVAL' });
  await t.rejects(nl.addNeighbor(`a${id}`, '198.51.100.9', 'zz:00'), { op: 'addNeighbor', code: 'EINVAL' });
  await t.rejects(nl.addRoute({ dst: 'nonsense', dev: `a${id}` }), { op: 'addRoute', code: 'EINVAL' });
  await t.rejects(nl.addRoute({ dst: '198.51.100.0/24', gateway: '2001:db8::1' }), { code: 'EINVAL' });
  await t.rejects(nl.moveToNetns(`a${id}`, `/var/run/netns/none-${id}`), { op: 'setLink', code: 'ENOENT' });
  await t.rejects(nl.writeSysctl('net/ipv4/../../kernel/hostname', 'x'), { op: 'writeSysctl', code: 'EINVAL' });
  t.throws(() => Netlink.open(`/var/run/netns/none-${id}`), NetlinkError);
  const err = await nl.setUp(`z${id}`).catch((e: unknown) => e);
  t.type(err, NetlinkError);
  t.match((err as Error).message, new RegExp(`^setLink z${id}: ENODEV`));
  await nl.close();
  await t.rejects(nl.getLink('lo'), { code: 'EBADF' }, 'a closed handle refuses work');
});
