import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { invoke, testHive } from '../../src/hive/index.js';
import { statedirCell } from '../../src/cells/statedir/index.js';
import { identityCell, IdentityAllocatorToken } from '../../src/cells/identity/index.js';
import { policyCell, cidrIPCacheCell, PolicyRepositoryToken, type Repository } from '../../src/cells/policy/index.js';
import { datapathCell, DatapathToken, Proto, type Datapath } from '../../src/cells/datapath/index.js';
import { memoryDatapathCell } from '../../src/cells/datapath-memory/index.js';
import { parseLabels } from '../../src/lib/labels.js';

t.test('real cells: a CNP with toCIDR, entities and a deny, enforced by the memory datapath', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cellium-policy-e2e-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const use = invoke('use', (_d: Datapath) => undefined, DatapathToken);
  const h = await testHive(t, [statedirCell, identityCell, policyCell, datapathCell, memoryDatapathCell, cidrIPCacheCell, use], {
    config: { 'state-dir': dir, 'datapath-mode': 'memory' },
  });
  const alloc = h.get(IdentityAllocatorToken);
  const repo = h.get(PolicyRepositoryToken) as Repository;
  const dp = h.get(DatapathToken);
  const client = (await alloc.allocate(parseLabels(['k8s:app=client', 'k8s:io.kubernetes.pod.namespace=prod']))).identity;
  const web = (await alloc.allocate(parseLabels(['k8s:app=web', 'k8s:io.kubernetes.pod.namespace=prod']))).identity;
  dp.maps.upsertIPCache({ cidr: '10.200.0.2/32', identity: client.id });
  dp.maps.upsertIPCache({ cidr: '10.200.0.3/32', identity: web.id });
  repo.import(`apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: client, namespace: prod}
spec:
  endpointSelector: {matchLabels: {app: client}}
  egress:
  - toCIDR: [192.0.2.0/24]
    toPorts: [{ports: [{port: "443", protocol: TCP}]}]
  - toEndpoints: [{matchLabels: {app: web}}]
  egressDeny:
  - toCIDR: [192.0.2.66/32]
`);
  await repo.settled();
  const epId = 42;
  dp.maps.setPolicy(epId, repo.resolve(client).entries);
  t.same(await dp.maps.flush(), [], 'the map state is accepted by the datapath');
  const egress = async (dst: string, dport: number) => (await dp.verdict(epId, 'egress', { src: '10.200.0.2', dst, protocol: Proto.TCP, dport })).allowed;
  t.equal(await egress('192.0.2.10', 443), true, 'toCIDR on 443');
  t.equal(await egress('192.0.2.10', 80), false, 'toCIDR, other port');
  t.equal(await egress('192.0.2.66', 443), false, 'the denied /32 inside the allowed /24');
  t.equal(await egress('198.51.100.1', 443), false, 'world outside the CIDR');
  t.equal(await egress('10.200.0.3', 8080), true, 'toEndpoints, any port');
  t.equal((await dp.verdict(epId, 'egress', { src: '10.200.0.2', dst: '192.0.2.66', protocol: Proto.TCP, dport: 443 })).reason, 'policy-deny');
  const trace = repo.trace({ identity: client.id }, { labels: ['cidr:192.0.2.66/32', 'reserved:world'] }, 443, 'TCP');
  t.equal(trace.verdict, 'denied', 'the trace agrees');
});
