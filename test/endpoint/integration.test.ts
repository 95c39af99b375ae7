import t from 'tap';
import { testHive } from '../../src/hive/index.js';
import { statedirCell } from '../../src/cells/statedir/index.js';
import { identityCell } from '../../src/cells/identity/index.js';
import { ipamCell, IPAMToken } from '../../src/cells/ipam/index.js';
import { policyCell, PolicyRepositoryToken } from '../../src/cells/policy/index.js';
import { datapathCell, DatapathToken } from '../../src/cells/datapath/index.js';
import { MemoryDatapath, memoryDatapathCell } from '../../src/cells/datapath-memory/index.js';
import { endpointCell, EndpointAPIManagerToken, EndpointManagerImplToken, EndpointRestorerToken, type EndpointChangeRequest } from '../../src/cells/endpoint/index.js';
import { tempStateDir } from './mocks.js';

const CELLS = [statedirCell, identityCell, ipamCell, policyCell, datapathCell, memoryDatapathCell, endpointCell];
const POLICY = JSON.stringify({
  apiVersion: 'cilium.io/v2',
  kind: 'CiliumNetworkPolicy',
  metadata: { name: 'server-ingress', namespace: 'default' },
  spec: {
    endpointSelector: { matchLabels: { app: 'server' } },
    ingress: [{ fromEndpoints: [{ matchLabels: { app: 'client' } }], toPorts: [{ ports: [{ port: '80', protocol: 'TCP' }] }] }],
  },
});

t.test('real cells, memory datapath: create, enforce policy, delete, restore', async (t) => {
  const dir = tempStateDir(t, 'integration');
  const cfg = { 'state-dir': dir, 'ipv6-range': 'fd00:200::/112' };
  const h = await testHive(t, CELLS, { config: cfg });
  const api = h.get(EndpointAPIManagerToken);
  const ipam = h.get(IPAMToken);
  const dp = h.get(DatapathToken) as MemoryDatapath;
  const create = async (n: number, app: string) => {
    const owner = `default/${app}-${n}`;
    const v4 = ipam.allocateNext('ipv4', owner, { expirationMs: 60_000 });
    const v6 = ipam.allocateNext('ipv6', owner);
    const req: EndpointChangeRequest = {
      'container-id': `c${n}`, 'container-interface-name': 'eth0', 'interface-name': `lxc${n}`, 'interface-index': 10 + n,
      mac: '02:00:00:00:00:0a', 'host-mac': '02:00:00:00:00:0b',
      addressing: { ipv4: v4.ip, 'ipv4-expiration-uuid': v4.expirationUUID, ipv6: v6.ip },
      'k8s-pod-name': `${app}-${n}`, 'k8s-namespace': 'default', labels: [`k8s:app=${app}`], 'sync-build-endpoint': true,
    };
    return api.createEndpoint({}, req);
  };
  const server = await create(1, 'server');
  const client = await create(2, 'client');
  const other = await create(3, 'other');
  t.equal(server.state, 'ready');
  t.ok(server.identity! >= 256 && server.identity !== client.identity);
  const pkt = (src: string, dport: number) => ({ src, dst: server.ipv4!, protocol: 6, dport });
  t.equal((await dp.verdict(server.id, 'ingress', pkt(client.ipv4!, 8080))).allowed, true, 'no policy selects the server yet: allow all');

  const change = h.get(PolicyRepositoryToken).import(POLICY);
  t.ok(change.affected === 'all' || change.affected.has(server.identity!), 'the server identity is affected');
  for (let i = 0; i < 100 && server.toModel().status.policy?.realized?.['policy-revision'] !== change.revision; i++) await new Promise((r) => setTimeout(r, 10));
  t.equal(server.toModel().status.policy?.realized?.['policy-revision'], change.revision, 'regenerated after the policy change');
  const regens = (ep: typeof other) => (ep as unknown as { regenerations: number }).regenerations;
  const otherRegens = regens(other);
  for (let i = 0; i < 100 && other.toModel().status.policy?.realized?.['policy-revision'] !== change.revision; i++) await new Promise((r) => setTimeout(r, 10));
  t.equal(other.toModel().status.policy?.realized?.['policy-revision'], change.revision, 'an endpoint the change does not select realizes the new revision too (bumped, like Cilium)');
  t.equal(regens(other), otherRegens, 'without a regeneration');
  t.same(await dp.verdict(server.id, 'ingress', pkt(client.ipv4!, 80)), { allowed: true, peerIdentity: client.identity });
  t.same(await dp.verdict(server.id, 'ingress', pkt(client.ipv4!, 81)), { allowed: false, reason: 'policy', peerIdentity: client.identity });
  t.same(await dp.verdict(server.id, 'ingress', pkt(other.ipv4!, 80)), { allowed: false, reason: 'policy', peerIdentity: other.identity });
  t.same(await dp.verdict(server.id, 'ingress', { src: client.ipv6!, dst: server.ipv6!, protocol: 6, dport: 80 }), { allowed: true, peerIdentity: client.identity });
  t.same(await dp.verdict(client.id, 'egress', { src: client.ipv4!, dst: server.ipv4!, protocol: 6, dport: 9999 }), { allowed: true, peerIdentity: server.identity }, 'client egress not enforced');
  t.same(await dp.dropCounters(), { policy: 2 });

  t.same(server.toModel().status.policy?.realized?.['allowed-ingress-identities'], [client.identity]);
  t.equal(server.toModel().status.policy?.realized?.['policy-enabled'], 'ingress');

  const late = await create(4, 'client');
  t.equal(late.identity, client.identity, 'same labels, same identity');
  const late2 = await create(5, 'client');
  await api.patchLabels({}, String(late2.id), ['k8s:version=2'], []);
  t.not(late2.identity, client.identity, 'a new client identity appears after the policy');
  for (let i = 0; i < 100 && !(await dp.verdict(server.id, 'ingress', pkt(late2.ipv4!, 80))).allowed; i++) await new Promise((r) => setTimeout(r, 10));
  t.same(await dp.verdict(server.id, 'ingress', pkt(late2.ipv4!, 80)), { allowed: true, peerIdentity: late2.identity }, 'the server was regenerated for the new identity');
  await api.deleteEndpoint({}, String(late.id));
  await api.deleteEndpoint({}, String(late2.id));

  await api.deleteEndpoint({}, String(other.id));
  t.equal(ipam.ownerOf(other.ipv4!), undefined, 'IP released on delete');
  const serverId = server.id;
  const serverIdentity = server.identity;
  const repo = h.get(PolicyRepositoryToken);
  const rulesBefore = { rules: repo.get(), revision: repo.revision };
  await h.hive.stop();

  const h2 = await testHive(t, CELLS, { config: cfg });
  const summary = await h2.get(EndpointRestorerToken).done;
  t.same(summary.restored.sort(), [serverId, client.id].sort());
  const back = h2.get(EndpointManagerImplToken).lookup(String(serverId))!;
  t.equal(back.state, 'ready');
  t.equal(back.identity, serverIdentity, 'the persisted identity table gives the same identity back');
  t.equal(h2.get(IPAMToken).ownerOf(back.ipv4!), 'default/server-1', 'IP re-claimed from the new IPAM');
  const dp2 = h2.get(DatapathToken);
  const repo2 = h2.get(PolicyRepositoryToken);
  t.same({ rules: repo2.get(), revision: repo2.revision }, rulesBefore, 'the policy store gives the same rules and revision back');
  t.same(await dp2.verdict(serverId, 'ingress', pkt(client.ipv4!, 8080)), { allowed: false, reason: 'policy', peerIdentity: client.identity }, 'the restored server still denies what the policy does not allow');
  t.same(await dp2.verdict(serverId, 'ingress', pkt(client.ipv4!, 80)), { allowed: true, peerIdentity: client.identity }, 'and allows what it allows');
});
