import t from 'tap';
import { testHive } from '../../src/hive/index.js';
import { cidrIPCacheCell, NamedPortMapToken, NamedPortMultiMap } from '../../src/cells/policy/index.js';
import { IdentityAllocatorToken } from '../../src/cells/identity/index.js';
import { DatapathToken, type Datapath, type IPCacheEntry } from '../../src/datapath/types.js';
import { MockAllocator } from './helpers.js';

/** A datapath mock recording ipcache writes. */
function fakeDatapath() {
  const ipcache = new Map<string, number>();
  const maps = {
    upsertIPCache: (e: IPCacheEntry) => void ipcache.set(e.cidr, e.identity),
    deleteIPCache: (cidr: string) => void ipcache.delete(cidr),
  };
  return { ipcache, dp: { mode: 'memory', maps } as unknown as Datapath };
}

t.test('CIDR identities are mirrored into the ipcache while they exist', async (t) => {
  const alloc = new MockAllocator();
  const before = await alloc.allocateCIDR('192.0.2.0/24');
  alloc.id('k8s:app=web');
  const { ipcache, dp } = fakeDatapath();
  await testHive(t, [cidrIPCacheCell], { replace: [[IdentityAllocatorToken, alloc], [DatapathToken, dp], [NamedPortMapToken, new NamedPortMultiMap()]] });
  t.same([...ipcache], [['192.0.2.0/24', before.id]], 'existing CIDR identities at start; endpoint identities are not written');
  const v6 = await alloc.allocateCIDR('2001:db8::/32');
  t.equal(ipcache.get('2001:db8::/32'), v6.id, 'IPv6 labels (cidr:2001-db8--/32) map back to the prefix');
  await alloc.release(before.id);
  t.notOk(ipcache.has('192.0.2.0/24'), 'removed with the identity');
});

t.test('a CIDR identity of an endpoint\'s host address leaves the endpoint\'s ipcache entry alone, and takes the key once the address is nobody\'s', async (t) => {
  const alloc = new MockAllocator();
  const endpoints = new NamedPortMultiMap();
  const { ipcache, dp } = fakeDatapath();
  await testHive(t, [cidrIPCacheCell], { replace: [[IdentityAllocatorToken, alloc], [DatapathToken, dp], [NamedPortMapToken, endpoints]] });
  const pod = alloc.id('k8s:pod=b');
  endpoints.upsert('endpoint:7', pod.id, [], ['10.0.0.12']);
  ipcache.set('10.0.0.12/32', pod.id); // what the endpoint's regeneration wrote
  const except = await alloc.allocateCIDR('10.0.0.12/32');
  t.equal(ipcache.get('10.0.0.12/32'), pod.id, 'an ipBlock except naming the pod does not turn the pod into a CIDR identity');
  await alloc.release(except.id);
  t.equal(ipcache.get('10.0.0.12/32'), pod.id, 'nor does its release remove the pod\'s entry');
  const again = await alloc.allocateCIDR('10.0.0.12/32');
  ipcache.delete('10.0.0.12/32'); // the endpoint's cleanup, before it leaves the map
  endpoints.remove('endpoint:7');
  t.equal(ipcache.get('10.0.0.12/32'), again.id, 'the pod gone: the CIDR identity takes its host prefix (the except keeps excepting)');
  const other = await alloc.allocateCIDR('10.0.0.0/24');
  t.equal(ipcache.get('10.0.0.0/24'), other.id, 'prefixes that are no endpoint\'s address are written as before');
});
