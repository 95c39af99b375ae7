// isLocalAddress against the kernel (root): in a namespace of the test's own, an address on a
// veth (IPv4 and IPv6, DAD off) is local, another address of its subnet and one routed
// nowhere are not, and loopback is. isLocalAddressNow (the same lookup on the calling thread, what
// the BPF datapath asks per regeneration) answers the same, and refuses the same.
import t from 'tap';
import { withNetlink } from '../../src/netlink/index.js';
import { createNetns, ip, uniq } from './netns.js';
import { needs } from '../needs.js';

const skip = needs('root', 'creates a network namespace');

t.test('an address of the namespace is local, others are not', { skip }, async (t) => {
  const ns = createNetns(`cl-local-${uniq()}`);
  t.teardown(ns.remove);
  ip('-n', ns.name, 'link', 'set', 'lo', 'up');
  ip('-n', ns.name, 'link', 'add', 'd0', 'type', 'veth', 'peer', 'name', 'd1');
  ip('-n', ns.name, 'addr', 'add', '192.0.2.7/24', 'dev', 'd0');
  ip('-n', ns.name, 'addr', 'add', '2001:db8::7/64', 'dev', 'd0', 'nodad');
  ip('-n', ns.name, 'link', 'set', 'd0', 'up');
  const local = (addr: string): Promise<boolean> => withNetlink(ns.path, (nl) => nl.isLocalAddress(addr));
  t.equal(await local('192.0.2.7'), true, 'the IPv4 address of d0');
  t.equal(await local('2001:db8::7'), true, 'the IPv6 address of d0');
  t.equal(await local('127.0.0.1'), true, 'loopback');
  t.equal(await local('192.0.2.8'), false, 'another address of the subnet');
  t.equal(await local('2001:db8::8'), false, 'another IPv6 address of the subnet');
  t.equal(await local('198.51.100.1'), false, 'an address routed nowhere (no default route)');
  await t.rejects(local('not-an-ip'), { message: /is not an IP address/ }, 'a bad address is refused');

  const addrs = ['192.0.2.7', '2001:db8::7', '127.0.0.1', '192.0.2.8', '2001:db8::8', '198.51.100.1'];
  const now = await withNetlink(ns.path, async (nl) => addrs.map((a) => nl.isLocalAddressNow(a)));
  t.strictSame(now, [true, true, true, false, false, false], 'isLocalAddressNow: the same answers');
  await withNetlink(ns.path, async (nl) => {
    t.throws(() => nl.isLocalAddressNow('not-an-ip'), { message: /is not an IP address/ }, 'isLocalAddressNow: a bad address is refused');
  });
  const closed = await withNetlink(ns.path, async (nl) => nl);
  t.throws(() => closed.isLocalAddressNow('192.0.2.7'), { code: 'EBADF' }, 'isLocalAddressNow on a closed handle throws');
});
