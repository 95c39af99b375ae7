// applyNetlinkSteps against the real kernel: a pod's setup as one batch inside its namespace (lo up,
// addresses, interface up, onlink default route, permanent gateway neighbour, a sysctl), checked
// with `ip -j`; a failing step stops the batch and is named by its index; bad steps are refused.
import t from 'tap';
import { applyNetlinkSteps, Netlink, NetlinkError } from '../../src/netlink/index.js';
import { hostAndPod, ip, ipJson, uniq } from './netns.js';
import { needs } from '../needs.js';

const skip = needs('root', 'creates network namespaces and veth pairs');

t.test('a pod setup as one batch inside the namespace', { skip }, async (t) => {
  const { id, hostNs, podNs } = hostAndPod(t, 'clst');
  const host = Netlink.open(hostNs.path);
  t.teardown(() => host.close());
  await host.createVeth({ name: `lxc${id}`, peerName: 'eth0', peerNetns: podNs.path, mac: '02:00:00:aa:bb:02' });

  await applyNetlinkSteps(podNs.path, [
    { op: 'setLink', name: 'lo', change: { up: true } },
    { op: 'addAddress', dev: 'eth0', cidr: '198.51.100.9/32' },
    { op: 'setLink', name: 'eth0', change: { up: true, mtu: 1400 } },
    { op: 'addRoute', route: { dst: 'default', gateway: '198.51.100.1', dev: 'eth0', onlink: true } },
    { op: 'addNeighbor', dev: 'eth0', ip: '198.51.100.1', mac: '02:00:00:aa:bb:02', permanent: true },
    { op: 'writeSysctl', key: 'net.ipv4.conf.eth0.rp_filter', value: 0 },
  ]);
  const [eth0] = ipJson<{ flags: string[]; mtu: number }>('-n', podNs.name, 'link', 'show', 'eth0');
  t.ok(eth0!.flags.includes('UP'), 'eth0 is up');
  t.equal(eth0!.mtu, 1400);
  const [lo] = ipJson<{ flags: string[] }>('-n', podNs.name, 'link', 'show', 'lo');
  t.ok(lo!.flags.includes('UP'), 'lo is up');
  const [route] = ipJson<{ dst: string; gateway: string; flags: string[] }>('-n', podNs.name, 'route', 'show', 'default');
  t.match(route, { dst: 'default', gateway: '198.51.100.1' });
  t.ok(route!.flags.includes('onlink'), 'onlink default route');
  t.match(ipJson('-n', podNs.name, 'neigh', 'show', 'dev', 'eth0'), [{ dst: '198.51.100.1', lladdr: '02:00:00:aa:bb:02', state: ['PERMANENT'] }]);
  t.equal(ip('netns', 'exec', podNs.name, 'cat', '/proc/sys/net/ipv4/conf/eth0/rp_filter').trim(), '0', 'the sysctl was written inside the pod namespace');
  t.notOk(ipJson<{ ifname: string }>('-n', hostNs.name, 'link').some((l) => l.ifname === 'eth0'), 'nothing happened in the other namespace');

  // The first failure stops the batch: the step after it is not applied.
  const err = await applyNetlinkSteps(podNs.path, [
    { op: 'addAddress', dev: 'eth0', cidr: '198.51.100.10/32' },
    { op: 'addRoute', route: { dst: '203.0.113.0/24', dev: `nope${id}` } },
    { op: 'addAddress', dev: 'eth0', cidr: '198.51.100.11/32' },
  ]).then(() => undefined, (e: unknown) => e);
  t.ok(err instanceof NetlinkError, 'a NetlinkError');
  t.match(err, { op: 'addRoute', step: 1, code: 'ENODEV' });
  const addrs = ipJson<{ addr_info: Array<{ local: string }> }>('-n', podNs.name, 'addr', 'show', 'dev', 'eth0')[0]!.addr_info.map((a) => a.local);
  t.ok(addrs.includes('198.51.100.10'), 'the step before the failure was applied');
  t.notOk(addrs.includes('198.51.100.11'), 'the step after it was not');
});

t.test('bad batches are refused before reaching the kernel', { skip }, async (t) => {
  await t.rejects(applyNetlinkSteps(`/var/run/netns/missing-${uniq()}`, [{ op: 'setLink', name: 'lo', change: { up: true } }]), { name: 'NetlinkError', code: 'ENOENT', op: 'applySteps' }, 'a missing namespace');
  await t.rejects(applyNetlinkSteps(undefined, [{ op: 'addRoute', route: { dst: 'not-an-ip', dev: 'lo' } }]), { name: 'NetlinkError', code: 'EINVAL', op: 'addRoute' }, 'a route destination that is not an IP');
  await t.rejects(applyNetlinkSteps(undefined, [{ op: 'bogus' } as never]), { name: 'NetlinkError', code: 'EINVAL', message: /step 0: unknown op "bogus"/ }, 'an unknown op');
  await applyNetlinkSteps(undefined, []);
  t.pass('an empty batch is a no-op');
});
