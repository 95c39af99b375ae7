// The ipcache of Kubernetes mode from CiliumEndpoints and CiliumNodes, on fakes of the datapath's
// maps, the endpoints and the node registry: other nodes' endpoints in while their node is known,
// out with their CiliumEndpoint or their node; this node's CiliumEndpoints skipped; a local
// endpoint's address wins; an address of two CiliumEndpoints goes back to the other when one goes;
// an unreadable CiliumEndpoint contributes nothing, naming the field.
import t from 'tap';
import { Subject } from 'rxjs';
import { CepIPCache, cepEntries, type ClusterNode, type NodeEvent, type NodeRegistry } from '../../src/cells/cluster/index.js';
import type { EndpointManager } from '../../src/cells/endpoint/index.js';
import type { CiliumEndpointObject, ResourceEvent } from '../../src/cells/k8s/index.js';
import type { Datapath } from '../../src/datapath/types.js';
import { silentLogger } from '../../src/hive/index.js';

const SELF: ClusterNode = { name: 'n1', cluster: 'default', ipv4: '10.0.0.1', local: true };
const N2: ClusterNode = { name: 'n2', cluster: 'default', ipv4: '10.0.0.2', local: false };

function setUp(localIPs: string[] = []) {
  const maps = new Map<string, number>();
  const dp = { maps: { upsertIPCache: (e: { cidr: string; identity: number }) => void maps.set(e.cidr, e.identity), deleteIPCache: (c: string) => void maps.delete(c) } } as unknown as Datapath;
  const eps = { lookup: (k: string) => (localIPs.includes(k.split(':').slice(1).join(':')) ? {} : undefined), getEndpoints: () => [] } as unknown as EndpointManager;
  const nodes = { self: () => SELF, list: () => [SELF], events$: new Subject<NodeEvent>(), nodeIds: () => [] } as NodeRegistry;
  return { maps, c: new CepIPCache(nodes, eps, dp, silentLogger()) };
}

function cep(name: string, ip: string, node: string, id: number | undefined): ResourceEvent<CiliumEndpointObject> {
  const object = { metadata: { name, namespace: 'ns' }, status: { ...(id !== undefined ? { identity: { id } } : {}), networking: { node, addressing: [{ ipv4: ip }] } } };
  return { kind: 'upsert', key: `ns/${name}`, object };
}

t.test('entries follow CiliumEndpoints and their node', async (t) => {
  const { maps, c } = setUp();
  c.onCep(cep('a', '10.1.0.5', '10.0.0.2', 100));
  t.same([...maps], [], 'its node is not known yet: nothing');
  c.onNode({ kind: 'upsert', node: N2 });
  t.same([...maps].sort(), [['10.0.0.2/32', 6], ['10.1.0.5/32', 100]], 'the node (remote-node) and its endpoint');
  t.same(c.list().map((e) => [e.cidr, e.identity, e.source, e.name ?? '']), [['10.0.0.2/32', 6, 'custom-resource', 'n2'], ['10.1.0.5/32', 100, 'custom-resource', 'a']]);
  c.onCep(cep('a', '10.1.0.5', '10.0.0.2', 101));
  t.equal(maps.get('10.1.0.5/32'), 101, 'a new identity replaces the entry');
  c.onCep({ kind: 'delete', key: 'ns/a', object: {} });
  t.notOk(maps.has('10.1.0.5/32'), 'its CiliumEndpoint deleted: gone');
  c.onCep(cep('b', '10.1.0.6', '10.0.0.2', 100));
  c.onNode({ kind: 'delete', node: N2 });
  t.same([...maps], [], 'the node deleted: its address and its endpoints are gone, though the CiliumEndpoint stays');
});

t.test('this node\'s CiliumEndpoints, local addresses, two owners of one address', async (t) => {
  const { maps, c } = setUp(['10.1.0.9']);
  c.onNode({ kind: 'upsert', node: N2 });
  c.onCep(cep('mine', '10.1.0.7', '10.0.0.1', 100));
  t.notOk(maps.has('10.1.0.7/32'), 'this node\'s CiliumEndpoint is skipped');
  c.onCep(cep('x', '10.1.0.9', '10.0.0.2', 100));
  t.notOk(maps.has('10.1.0.9/32'), 'a local endpoint has the address: not overwritten');
  c.onCep(cep('old', '10.1.0.8', '10.0.0.2', 200));
  c.onCep(cep('new', '10.1.0.8', '10.0.0.2', 300));
  t.equal(maps.get('10.1.0.8/32'), 300, 'the last changed wins');
  c.onCep({ kind: 'delete', key: 'ns/new', object: {} });
  t.equal(maps.get('10.1.0.8/32'), 200, 'back to the other owner');
  c.onCep(cep('pending', '10.1.0.10', '10.0.0.2', undefined));
  t.notOk(maps.has('10.1.0.10/32'), 'no identity yet: nothing');
});

t.test('an unreadable CiliumEndpoint contributes nothing and says which field', async (t) => {
  t.match(cepEntries({ metadata: { name: 'a', namespace: 'ns' }, status: { identity: { id: -1 }, networking: { node: '10.0.0.2', addressing: [] } } }, '10.0.0.1').problem, /CiliumEndpoint ns\/a: \/status\/identity\/id -1 is not a positive integer/);
  t.match(cepEntries({ metadata: { name: 'a', namespace: 'ns' }, status: { identity: { id: 5 }, networking: { node: 'x' } } }, '10.0.0.1').problem, /\/status\/networking\/node "x" is not an IP address/);
  t.match(cepEntries({ metadata: { name: 'a', namespace: 'ns' }, status: { identity: { id: 5 }, networking: { node: '10.0.0.2', addressing: 'no' } } }, '10.0.0.1').problem, /\/status\/networking\/addressing is not a list/);
  const { maps, c } = setUp();
  c.onNode({ kind: 'upsert', node: N2 });
  c.onCep(cep('a', '10.1.0.5', '10.0.0.2', 100));
  c.onCep({ kind: 'upsert', key: 'ns/a', object: { metadata: { name: 'a', namespace: 'ns' }, status: { identity: { id: 'x' }, networking: { node: '10.0.0.2', addressing: [{ ipv4: '10.1.0.5' }] } } } });
  t.notOk(maps.has('10.1.0.5/32'), 'the entry it had is removed (fail closed)');
});
