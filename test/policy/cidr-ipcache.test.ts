import t from 'tap';
import { testHive } from '../../src/hive/index.js';
import { cidrIPCacheCell } from '../../src/cells/policy/index.js';
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
  await testHive(t, [cidrIPCacheCell], { replace: [[IdentityAllocatorToken, alloc], [DatapathToken, dp]] });
  t.same([...ipcache], [['192.0.2.0/24', before.id]], 'existing CIDR identities at start; endpoint identities are not written');
  const v6 = await alloc.allocateCIDR('2001:db8::/32');
  t.equal(ipcache.get('2001:db8::/32'), v6.id, 'IPv6 labels (cidr:2001-db8--/32) map back to the prefix');
  await alloc.release(before.id);
  t.notOk(ipcache.has('192.0.2.0/24'), 'removed with the identity');
});
