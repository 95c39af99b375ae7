// Restored endpoints keep their identity numbers (real statedir, identity, IPAM, policy, memory
// datapath and endpoint cells): even when identities.json was moved aside, and before identity GC
// can see them unreferenced.
import t from 'tap';
import { renameSync } from 'node:fs';
import { join } from 'node:path';
import { testHive } from '../../src/hive/index.js';
import { statedirCell } from '../../src/cells/statedir/index.js';
import { identityCell, IdentityAllocatorToken, LocalIdentityAllocator } from '../../src/cells/identity/index.js';
import { ipamCell } from '../../src/cells/ipam/index.js';
import { policyCell } from '../../src/cells/policy/index.js';
import { datapathCell } from '../../src/cells/datapath/index.js';
import { memoryDatapathCell } from '../../src/cells/datapath-memory/index.js';
import { endpointCell, EndpointAPIManagerToken, EndpointManagerImplToken, EndpointRestorerToken, type EndpointChangeRequest } from '../../src/cells/endpoint/index.js';
import { tempStateDir } from './mocks.js';

const CELLS = [statedirCell, identityCell, ipamCell, policyCell, datapathCell, memoryDatapathCell, endpointCell];

const req = (n: number, app: string): EndpointChangeRequest => ({
  'container-id': `c${n}`, 'container-interface-name': 'eth0', 'interface-name': `lxc${n}`, 'interface-index': 10 + n,
  addressing: { ipv4: `10.200.0.${10 + n}` }, 'k8s-pod-name': `${app}-${n}`, 'k8s-namespace': 'default', labels: [`k8s:app=${app}`],
  'sync-build-endpoint': true,
});

t.test('restored endpoints re-claim their identity numbers, with or without identities.json', async (t) => {
  const dir = tempStateDir(t, 'identity');
  const cfg = { 'state-dir': dir, 'datapath-mode': 'memory' };
  const h = await testHive(t, CELLS, { config: cfg });
  const api = h.get(EndpointAPIManagerToken);
  const first = await api.createEndpoint({}, req(1, 'first'));
  const y = await api.createEndpoint({}, req(2, 'y'));
  await api.deleteEndpoint({}, String(first.id)); // frees the lowest number
  const z = await api.createEndpoint({}, req(3, 'z'));
  const before = new Map([[y.id, y.identity], [z.id, z.identity]]);
  t.notOk([...before.values()].includes(first.identity), 'the numbers left are not the lowest ones: fresh numbering would differ');
  await h.hive.stop();

  for (const lost of [false, true]) {
    if (lost) renameSync(join(dir, 'identities.json'), join(dir, 'identities.json.bad'));
    const h2 = await testHive(t, CELLS, { config: { ...cfg, 'identity-gc-interval': '1ms' } });
    const summary = await h2.get(EndpointRestorerToken).done;
    t.same(summary.restored.sort(), [y.id, z.id].sort(), `${lost ? 'identities.json moved aside' : 'identities.json kept'}: both restored`);
    const mgr = h2.get(EndpointManagerImplToken);
    const after = new Map([y.id, z.id].map((id) => [id, mgr.lookup(String(id))!.identity]));
    t.same(after, before, `${lost ? 'identities.json moved aside' : 'identities.json kept'}: the same identity numbers`);
    await new Promise((r) => setTimeout(r, 50)); // identity GC ran many times meanwhile
    const alloc = h2.get(IdentityAllocatorToken) as LocalIdentityAllocator;
    for (const id of before.values()) t.equal(alloc.refCount(id!), 1, `identity ${id} is referenced by its endpoint (GC leaves it)`);
    await h2.hive.stop();
  }
});
