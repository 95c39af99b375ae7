// The monitor cell's Enricher over real endpoint and identity cells (memory datapath): a read's
// events share one description per side, a side that did not change is the same object read after
// read, and one that changed (a relabelled pod, a deleted or new endpoint) is described anew at the
// next read: never a stale label.
import t from 'tap';
import { testHive } from '../../src/hive/index.js';
import { statedirCell } from '../../src/cells/statedir/index.js';
import { identityCell, IdentityAllocatorToken } from '../../src/cells/identity/index.js';
import { ipamCell } from '../../src/cells/ipam/index.js';
import { policyCell } from '../../src/cells/policy/index.js';
import { datapathCell } from '../../src/cells/datapath/index.js';
import { memoryDatapathCell } from '../../src/cells/datapath-memory/index.js';
import { endpointCell, EndpointAPIManagerToken, EndpointManagerToken } from '../../src/cells/endpoint/index.js';
import { Enricher } from '../../src/cells/monitor/index.js';
import type { MonitorEvent } from '../../src/monitor/index.js';
import { tempStateDir } from '../endpoint/mocks.js';

const CELLS = [statedirCell, identityCell, ipamCell, policyCell, datapathCell, memoryDatapathCell, endpointCell];
const TIME = '2026-11-27T10:00:00.000Z';

const event = (src: string, dst: string, o: Partial<MonitorEvent> = {}): MonitorEvent => ({
  type: 'drop', reason: 'policy', direction: 'ingress', endpointId: 7, protocol: 6, dport: 81, srcIdentity: 2, dstIdentity: 2, ifIndex: 9,
  src, dst, icmpType: 0, sport: 4123, tcpFlags: 0x02, ctStatus: 'new', match: 'none', action: 'deny', len: 60, ...o,
});

t.test('sides are described once a read, reused while unchanged, and anew after a change', async (t) => {
  const h = await testHive(t, CELLS, { config: { 'state-dir': tempStateDir(t, 'enrich'), 'ipv4-range': '10.244.7.0/24' } });
  const api = h.get(EndpointAPIManagerToken);
  const enricher = new Enricher(h.get(EndpointManagerToken), h.get(IdentityAllocatorToken));
  const create = (n: number, app: string) => api.createEndpoint({}, {
    'container-id': `enrich-${app}`, 'container-interface-name': 'eth0', 'interface-name': `lxcenrich${n}`, 'interface-index': 100 + n,
    addressing: { ipv4: `10.244.7.${n}` }, 'k8s-pod-name': app, 'k8s-namespace': 'default', labels: [`k8s:app=${app}`], 'sync-build-endpoint': true,
  });
  const client = await create(2, 'client');
  const remote = '192.0.2.9';

  const first = enricher.enrichAll([event(client.ipv4!, remote), event(client.ipv4!, remote, { sport: 5000 })], TIME);
  t.match(first[0]!.source, { ID: client.id, identity: client.identity, labels: ['k8s:app=client'], pod_name: 'client', namespace: 'default' });
  t.match(first[0]!.destination, { ID: 0, identity: 2, labels: ['reserved:world'] });
  t.equal(first[1]!.source, first[0]!.source, 'one description of the endpoint a read');
  t.equal(first[1]!.destination, first[0]!.destination, 'one description of the remote identity a read');

  const again = enricher.enrichAll([event(client.ipv4!, remote)], TIME);
  t.equal(again[0]!.source, first[0]!.source, 'an unchanged endpoint: the same description the next read');
  t.equal(again[0]!.destination, first[0]!.destination, 'an unchanged identity: the same description');
  t.equal(enricher.enrich(event(client.ipv4!, remote), TIME).source, first[0]!.source, 'a single event shares it too');

  await api.patchLabels({}, String(client.id), ['k8s:tier=web'], []);
  const relabelled = enricher.enrichAll([event(client.ipv4!, remote)], TIME)[0]!.source;
  t.not(relabelled, first[0]!.source, 'a relabelled pod is described anew');
  t.ok(relabelled.labels.includes('k8s:tier=web'), 'with its new label at the next read');
  t.same(relabelled.labels, client.labels, 'and exactly the labels the endpoint has now');
  t.equal(relabelled.identity, client.identity, 'and its new identity');
  t.not(client.identity, first[0]!.source.identity, 'the relabel changed the identity');

  const latePeer = '10.244.7.3';
  t.match(enricher.enrichAll([event(client.ipv4!, latePeer)], TIME)[0]!.destination, { ID: 0 }, 'no endpoint at the address yet: a remote side');
  const server = await create(3, 'server');
  t.match(enricher.enrichAll([event(client.ipv4!, latePeer)], TIME)[0]!.destination, { ID: server.id, pod_name: 'server', labels: ['k8s:app=server'] }, 'an endpoint created since: local at the next read');

  await api.deleteEndpoint({}, String(server.id));
  t.match(enricher.enrichAll([event(client.ipv4!, latePeer)], TIME)[0]!.destination, { ID: 0, identity: 2 }, 'a deleted endpoint: remote again at the next read');
});
