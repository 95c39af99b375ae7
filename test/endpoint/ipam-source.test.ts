// Endpoints whose addresses came from a delegated IPAM plugin (property cellium.io/ipam-source):
// a restore does not claim them in the node pool, and deleting the endpoint does not release the
// node pool's allocation of the same address (someone else's); node-pool endpoints still do both.
import t from 'tap';
import { testHive, type TestLike } from '../../src/hive/index.js';
import { statedirCell } from '../../src/cells/statedir/index.js';
import { endpointCell, EndpointAPIManagerToken, EndpointRestorerToken, IPAM_SOURCE_PROPERTY, type EndpointChangeRequest } from '../../src/cells/endpoint/index.js';
import { mocks, request, tempStateDir, type Mocks } from './mocks.js';

const ctx = {};
const delegated = { properties: { [IPAM_SOURCE_PROPERTY]: 'delegated-plugin:host-local' } };

async function hive(t: TestLike, dir: string, m: Mocks = mocks()) {
  const h = await testHive(t, [statedirCell, endpointCell], { replace: m.replace, config: { 'state-dir': dir } });
  return { ...m, h, api: h.get(EndpointAPIManagerToken), done: h.get(EndpointRestorerToken).done };
}

t.test('restore and removal leave the node pool alone for delegated addresses', async (t) => {
  const dir = tempStateDir(t, 'ipam-source');
  const one = await hive(t, dir);
  const dlg = await one.api.createEndpoint(ctx, request(1, delegated) as EndpointChangeRequest);
  const pool = await one.api.createEndpoint(ctx, request(2) as EndpointChangeRequest);
  t.equal(dlg.ipamSource, 'delegated-plugin:host-local');
  t.equal(pool.ipamSource, undefined);
  await one.h.hive.stop();

  const m = mocks();
  const two = await hive(t, dir, m);
  const summary = await two.done;
  t.same(summary.restored.sort(), [dlg.id, pool.id].sort(), 'both restored');
  t.equal(m.ipam.ownerOf(dlg.ipv4!), undefined, 'the delegated address is not claimed in the node pool');
  t.equal(m.ipam.ownerOf(pool.ipv4!), 'default/pod-2', 'the node-pool address is re-claimed');

  // someone else holds the delegated address in the node pool: removing the endpoint keeps that
  m.ipam.allocateIP(dlg.ipv4!, 'someone-else');
  await two.api.deleteEndpoint(ctx, String(dlg.id));
  t.equal(m.ipam.ownerOf(dlg.ipv4!), 'someone-else', "the node pool's allocation is untouched");
  await two.api.deleteEndpoint(ctx, String(pool.id));
  t.equal(m.ipam.ownerOf(pool.ipv4!), undefined, 'a node-pool endpoint releases its address');
});
