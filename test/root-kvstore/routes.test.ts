// Routes to other nodes' pod CIDRs (--auto-direct-node-routes) in a network namespace of the test's
// own: installed for a node, replaced when its CIDR changes, removed when it goes, put back by a
// resync after someone deleted it; the local node gets none.
import t from 'tap';
import { Subject } from 'rxjs';
import { NodeRoutes, type ClusterNode, type NodeEvent, type NodeRegistry } from '../../src/cells/cluster/index.js';
import { Netlink } from '../../src/netlink/index.js';
import { silentLogger } from '../../src/hive/index.js';
import type { Health } from '../../src/hive/health.js';
import { createNetns, ip, uniq } from '../root-netlink/netns.js';
import { needs } from '../needs.js';
import { until as pollUntil, type Poll } from '../until.js';

const skip = needs('root', 'creates network namespaces, veth pairs and routes');

const health: Health = { ok: () => undefined, degraded: () => undefined, stopped: () => undefined, scope: () => health, close: () => undefined };

class FakeNodes implements NodeRegistry {
  readonly subject = new Subject<NodeEvent>();
  readonly events$ = this.subject.asObservable();
  readonly nodes = new Map<string, ClusterNode>();
  self(): ClusterNode { return this.nodes.get('node-a')!; }
  list(): ClusterNode[] { return [...this.nodes.values()]; }
  nodeIds() { return []; }
  set(n: ClusterNode): void {
    this.nodes.set(n.name, n);
    if (!n.local) this.subject.next({ kind: 'upsert', node: n });
  }
  drop(name: string): void {
    const n = this.nodes.get(name)!;
    this.nodes.delete(name);
    this.subject.next({ kind: 'delete', node: n });
  }
}

const until = <T>(what: string, fn: Poll<T>, ms = 5000): Promise<T> => pollUntil(what, fn, ms, 20);

t.test('routes to other nodes\' pod CIDRs follow the nodes', { skip }, async (t) => {
  const ns = createNetns(`cellium-test-kvr-${uniq()}`);
  t.teardown(ns.remove);
  ip('-n', ns.name, 'link', 'add', 'underlay0', 'type', 'veth', 'peer', 'name', 'underlay1');
  ip('-n', ns.name, 'link', 'set', 'underlay1', 'up');
  ip('-n', ns.name, 'addr', 'add', '10.167.0.1/24', 'dev', 'underlay0');
  ip('-n', ns.name, 'link', 'set', 'underlay0', 'up');
  const nl = Netlink.open(ns.path);
  t.teardown(() => nl.close());
  const routes = () => ip('-n', ns.name, 'route', 'show').trim().split('\n').filter((l) => l.startsWith('10.168.'));

  const nodes = new FakeNodes();
  nodes.set({ name: 'node-a', cluster: 'default', ipv4: '10.167.0.1', ipv4AllocCidr: '10.168.1.0/24', local: true });
  nodes.set({ name: 'node-b', cluster: 'default', ipv4: '10.167.0.2', ipv4AllocCidr: '10.168.2.0/24', local: false });
  const r = new NodeRoutes(nodes, nl, health, silentLogger());
  nodes.events$.subscribe((ev) => r.onNodeEvent(ev)); // the cluster cell's observer job
  await r.start();
  t.teardown(() => r.stop());
  t.same(routes(), ['10.168.2.0/24 via 10.167.0.2 dev underlay0'], 'a route to b, none to the local node');

  nodes.set({ name: 'node-c', cluster: 'default', ipv4: '10.167.0.3', ipv4AllocCidr: '10.168.3.0/24', local: false });
  await until('the route to c', () => routes().length === 2);
  nodes.set({ name: 'node-b', cluster: 'default', ipv4: '10.167.0.2', ipv4AllocCidr: '10.168.12.0/24', local: false });
  await until('b\'s route replaced', () => routes().includes('10.168.12.0/24 via 10.167.0.2 dev underlay0') && !routes().some((l) => l.startsWith('10.168.2.0/24')));
  nodes.drop('node-c');
  await until('c\'s route removed', () => !routes().some((l) => l.startsWith('10.168.3.0/24')));
  t.same(routes(), ['10.168.12.0/24 via 10.167.0.2 dev underlay0']);

  ip('-n', ns.name, 'route', 'del', '10.168.12.0/24');
  await r.resync();
  t.same(routes(), ['10.168.12.0/24 via 10.167.0.2 dev underlay0'], 'a resync puts back a route someone deleted');
  t.same([...r.list()], [['node-b', { dst: '10.168.12.0/24', gateway: '10.167.0.2' }]]);
});
