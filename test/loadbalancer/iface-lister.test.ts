// The node's addresses without the netlink addon (a package installed without a compiler): Node's
// interface list, polled; it sees loopback's addresses as the rtnetlink lister does.
import t from 'tap';
import { existsSync } from 'node:fs';
import { addonPath } from '../../src/netlink/index.js';
import { interfaceLister, polledLister } from '../../src/cells/loadbalancer/iface-lister.js';

t.test('the polled lister lists loopback\'s addresses and has no local routes', async (t) => {
  const l = polledLister();
  const got = await l.list();
  t.ok(got.some((a) => a.ip === '127.0.0.1' && a.dev === 'lo'), '127.0.0.1 on lo', { got });
  t.equal(l.localRoutes, undefined, 'local routes need rtnetlink');
  const w = l.watch(() => undefined);
  t.match(w.polled, /^every 1000 ms/, 'says it polls');
  w.close();
  await l.close();
});

t.test('with the addon built, both listers agree on the interface addresses', { skip: existsSync(addonPath()) ? false : 'the netlink addon is not built (npm run build)' }, async (t) => {
  const nl = interfaceLister();
  t.teardown(() => nl.close());
  t.ok(nl.localRoutes, 'the rtnetlink lister has local routes');
  const key = (a: { ip: string; dev: string }): string => `${a.dev} ${a.ip.replace(/%.*$/, '')}`;
  const viaNetlink = new Set((await nl.list()).map(key));
  const polled = new Set((await polledLister().list()).map(key));
  for (const a of polled) t.ok(viaNetlink.has(a), `${a} seen over rtnetlink too`);
});
