// An endpoint's named ports (its pod's named container ports, which rules' named ingress ports
// resolve against): set and compared regardless of order, kept in the state directory's snapshot
// and restored, checked before restore trusts them; recorded in the node's named-port map (egress
// names of other endpoints' rules resolve against them) at each regeneration, removed with it.
import t from 'tap';
import { Endpoint } from '../../src/cells/endpoint/endpoint.js';
import type { EndpointSpec } from '../../src/cells/endpoint/spec.js';
import { storedEndpointProblem } from '../../src/cells/endpoint/stored-check.js';
import { asEndpoint } from '../../src/cells/endpoint/manager.js';
import { endpointCell, EndpointAPIManagerToken, type EndpointChangeRequest } from '../../src/cells/endpoint/index.js';
import { statedirCell } from '../../src/cells/statedir/index.js';
import { testHive } from '../../src/hive/index.js';
import { mocks, request, tempStateDir } from './mocks.js';

const spec: EndpointSpec = { ifName: 'lxc1', ifIndex: 7, mac: '02:00:00:00:00:01', hostMac: '02:00:00:00:00:02', ipv4: '10.200.0.5', namespace: 'prod', podName: 'web' };
const http = { name: 'http', port: 8080, protocol: 6 };
const dns = { name: 'dns', port: 53, protocol: 17 };

t.test('setNamedPorts reports a change only when the set changes', async (t) => {
  const ep = new Endpoint(spec, ['k8s:app=web']);
  t.same(ep.namedPorts, [], 'none at first');
  t.ok(ep.setNamedPorts([http, dns]), 'set: changed');
  t.same(ep.namedPorts, [dns, http], 'kept sorted by name');
  t.notOk(ep.setNamedPorts([dns, http]), 'the same ports in another order: no change');
  t.ok(ep.setNamedPorts([{ ...http, port: 9000 }, dns]), 'the number behind a name changed');
  t.ok(ep.setNamedPorts([{ ...http, name: 'web', port: 9000 }, dns]), 'a port renamed');
  t.same(ep.namedPorts.map((p) => p.name), ['dns', 'web']);
  t.ok(ep.setNamedPorts([]), 'all gone');
  t.same(ep.toSnapshot().namedPorts, undefined, 'none: not written');
});

t.test('the snapshot keeps them and a restored endpoint has them', async (t) => {
  const ep = new Endpoint(spec, ['k8s:app=web']);
  ep.setNamedPorts([http]);
  const snap = JSON.parse(JSON.stringify(ep.toSnapshot())) as ReturnType<Endpoint['toSnapshot']>;
  t.same(snap.namedPorts, [http]);
  t.equal(storedEndpointProblem({ ...snap, id: 3 }, 3), undefined, 'the stored form passes the check');
  const restored = new Endpoint(snap.spec, []);
  restored.restoreFrom(snap);
  t.same(restored.namedPorts, [http], 'restored');
  const bad: [unknown, RegExp][] = [
    ['http', /\/namedPorts: expected an array/],
    [[{ name: 'http', port: 0, protocol: 6 }], /\/namedPorts/],
    [[{ name: 'http', port: 70000, protocol: 6 }], /\/namedPorts/],
    [[{ name: 7, port: 80, protocol: 6 }], /\/namedPorts/],
    [[{ name: 'http', port: 80 }], /\/namedPorts/],
  ];
  for (const [namedPorts, re] of bad) t.match(storedEndpointProblem({ ...snap, id: 3, namedPorts }, 3), re, `refused: ${JSON.stringify(namedPorts)}`);
});

t.test('the endpoint cell keeps this node\'s endpoints in the named-port map: at each regeneration, and removed with the endpoint', async (t) => {
  const m = mocks();
  const h = await testHive(t, [statedirCell, endpointCell], { replace: m.replace, config: { 'state-dir': tempStateDir(t, 'named-map') } });
  const api = h.get(EndpointAPIManagerToken);
  const ep = await api.createEndpoint({}, request(1, { labels: ['k8s:app=web'] }) as EndpointChangeRequest);
  t.same(m.namedPorts.ports('http', 6, ep.identity!), [], 'no named ports yet');
  const changes: string[][] = [];
  m.namedPorts.onChange((names) => changes.push([...names]));
  asEndpoint(ep).setNamedPorts([http, dns]);
  await ep.regenerate('named ports changed');
  t.same(m.namedPorts.ports('http', 6, ep.identity!), [8080], 'recorded under its identity');
  t.same(m.namedPorts.ports('dns', 17, 0), [53], 'and for the wildcard peer');
  t.same(m.namedPorts.ports('http', 6, ep.identity! + 1), [], 'not under another identity');
  t.same(changes, [['dns', 'http']], 'one change with its names');
  await ep.regenerate('again');
  t.equal(changes.length, 1, 'a regeneration with the same ports changes nothing');
  await api.deleteEndpoint({}, String(ep.id));
  t.same(m.namedPorts.ports('http', 6, 0), [], 'removed with the endpoint');
  t.equal(m.namedPorts.size, 0);
});
