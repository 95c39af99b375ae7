// Named ports through CiliumEndpoints: this node writes its endpoints' named ports into their CEP
// (`status.named-ports`, Cilium's shape), and reads those of other nodes' CEPs into the named-port
// map (identity + ports; this node's CEPs skipped; invalid entries left out naming the field).
import t from 'tap';
import { cepNamedPorts, cepStatus } from '../../src/cells/k8s-endpoint-sync/index.js';
import type { EndpointView } from '../../src/cells/endpoint/index.js';

const LOCAL = '192.168.1.10';
const cep = (status: Record<string, unknown>, name = 'web-0', namespace = 'prod') => ({ metadata: { name, namespace }, status });

t.test('another node\'s CEP contributes its identity and named ports', async (t) => {
  const got = cepNamedPorts(cep({ identity: { id: 4242 }, networking: { node: '192.168.1.11' }, 'named-ports': [{ name: 'http', port: 8080, protocol: 'TCP' }, { name: 'dns', port: 53, protocol: 'UDP' }, { name: 'sig', port: 7000 }] }), LOCAL);
  t.equal(got.owner, 'cep:prod/web-0');
  t.same(got.contribution, { identity: 4242, ports: [{ name: 'http', port: 8080, protocol: 6 }, { name: 'dns', port: 53, protocol: 17 }, { name: 'sig', port: 7000, protocol: 6 }], addresses: [] }, 'protocol defaults to TCP');
  t.same(got.problems, []);
});

t.test('another node\'s CEP contributes its addresses (what an ipBlock selects pods by); what is not an address is left out', async (t) => {
  const got = cepNamedPorts(cep({ identity: { id: 4242 }, networking: { node: '192.168.1.11', addressing: [{ ipv4: '10.0.1.5', ipv6: 'fd00::5' }, { ipv4: 'nonsense' }] } }), LOCAL);
  t.same(got.contribution, { identity: 4242, ports: [], addresses: ['10.0.1.5', 'fd00::5'] });
});

t.test('this node\'s CEPs and CEPs without an identity contribute nothing', async (t) => {
  t.equal(cepNamedPorts(cep({ identity: { id: 4242 }, networking: { node: LOCAL }, 'named-ports': [{ name: 'http', port: 8080, protocol: 'TCP' }] }), LOCAL).contribution, undefined, 'this node\'s: the endpoint cell has them');
  t.equal(cepNamedPorts(cep({ networking: { node: '192.168.1.11' }, 'named-ports': [{ name: 'http', port: 8080, protocol: 'TCP' }] }), LOCAL).contribution, undefined, 'no identity yet');
  t.equal(cepNamedPorts(cep({ identity: { id: 0 }, networking: { node: '192.168.1.11' } }), LOCAL).contribution, undefined, 'identity 0 is none');
  t.same(cepNamedPorts({ metadata: { name: 'x', namespace: 'y' } }, LOCAL).contribution, undefined, 'no status at all');
});

t.test('invalid entries are left out (they allow nothing), each named with the field and the fix', async (t) => {
  const got = cepNamedPorts(cep({ identity: { id: 7 }, networking: { node: '192.168.1.11' }, 'named-ports': [
    { name: 'HTTP', port: 80, protocol: 'TCP' }, { name: 'http', port: 0, protocol: 'TCP' }, { name: 'http', port: 80, protocol: 'ICMP' }, null, { name: 'ok', port: 81, protocol: 'tcp' },
  ] }), LOCAL);
  t.same(got.contribution?.ports, [{ name: 'ok', port: 81, protocol: 6 }], 'only the valid entry');
  t.equal(got.problems.length, 4);
  t.match(got.problems[0], /^\/status\/named-ports\/0\/name: "HTTP" is not a port name; fix:/);
  t.match(got.problems[1], /^\/status\/named-ports\/1\/port: 0 is not a port number; fix: give 1-65535/);
  t.match(got.problems[2], /^\/status\/named-ports\/2\/protocol: "ICMP" is not TCP, UDP or SCTP; fix:/);
  t.match(got.problems[3], /^\/status\/named-ports\/3\/name/);
  const notArray = cepNamedPorts(cep({ identity: { id: 7 }, networking: { node: '192.168.1.11' }, 'named-ports': 'http' }), LOCAL);
  t.same(notArray.contribution?.ports, []);
  t.match(notArray.problems[0], /^\/status\/named-ports: expected an array/);
});

t.test('the CEP this node writes carries its endpoint\'s named ports as Cilium does (none: no field)', async (t) => {
  const view = (namedPorts: unknown[]) => ({
    toModel: () => ({ id: 12, status: { state: 'ready', networking: { addressing: [{ ipv4: '10.0.0.5' }] }, 'external-identifiers': {}, identity: { id: 4242, labels: ['k8s:app=web'] }, namedPorts } }),
  }) as unknown as EndpointView;
  t.same(cepStatus(view([{ name: 'http', port: 8080, protocol: 'TCP' }]), LOCAL)['named-ports'], [{ name: 'http', port: 8080, protocol: 'TCP' }]);
  t.notOk('named-ports' in cepStatus(view([]), LOCAL), 'no named ports: the field is left out');
});
