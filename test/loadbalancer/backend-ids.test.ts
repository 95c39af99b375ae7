import t from 'tap';
import { BackendIds, LBError } from '../../src/cells/loadbalancer/index.js';
import type { L3n4Addr } from '../../src/cells/loadbalancer/index.js';

const addr = (ip: string, port = 8080): L3n4Addr => ({ ip, port, protocol: 'tcp', scope: 'external' });

t.test('one ID per address, counted by the frontends that use it', async (t) => {
  const ids = new BackendIds(100);
  const a = ids.acquire(addr('10.0.1.1'), 'fe1');
  t.equal(a, 1);
  t.equal(ids.acquire(addr('10.0.1.1'), 'fe1'), a, 'acquiring twice for one frontend is one reference');
  t.equal(ids.acquireKey('10.0.1.1:8080/TCP', 'fe2'), a, 'a second frontend shares the ID');
  t.equal(ids.acquire(addr('10.0.1.1'), 'fe3'), a);
  t.equal(ids.release(addr('10.0.1.1'), 'fe2'), false, 'still referenced by fe1 and fe3');
  t.equal(ids.release(addr('10.0.1.1'), 'fe2'), false, 'releasing again changes nothing');
  t.equal(ids.release(addr('10.0.1.1'), 'fe1'), false, 'still referenced by fe3');
  t.equal(ids.release(addr('10.0.1.1'), 'other'), false, 'a frontend that never had it releases nothing');
  t.equal(ids.idOf(addr('10.0.1.1')), a);
  t.equal(ids.releaseKey('10.0.1.1:8080/TCP', 'fe3'), true, 'the last reference frees it');
  t.equal(ids.idOf(addr('10.0.1.1')), undefined);
  t.equal(ids.release(addr('10.0.1.1'), 'fe3'), false, 'a freed address has nothing to release');
  t.equal(ids.acquire(addr('10.0.1.2'), 'fe1'), 2, 'IDs go round before reusing a freed one');
});

t.test('a shared ID that drops back to one user and back to two stays counted', async (t) => {
  const ids = new BackendIds(10);
  const id = ids.acquire(addr('10.0.1.1'), 'a');
  ids.acquire(addr('10.0.1.1'), 'b');
  t.equal(ids.release(addr('10.0.1.1'), 'a'), false);
  ids.acquire(addr('10.0.1.1'), 'c');
  t.equal(ids.release(addr('10.0.1.1'), 'b'), false);
  t.equal(ids.release(addr('10.0.1.1'), 'b'), false, 'b is gone already');
  t.equal(ids.idOfKey('10.0.1.1:8080/TCP'), id);
  t.equal(ids.release(addr('10.0.1.1'), 'c'), true);
});

t.test('flags written are remembered per ID and forgotten with it', async (t) => {
  const ids = new BackendIds(3);
  const id = ids.acquire(addr('10.0.1.1'), 'a');
  t.equal(ids.flagsOf(id), undefined, 'nothing written yet');
  ids.setFlags(id, 0);
  t.equal(ids.flagsOf(id), 0);
  ids.setFlags(id, 3);
  t.equal(ids.flagsOf(id), 3);
  ids.setFlags(99, 1);
  t.equal(ids.flagsOf(99), undefined, 'an ID never allocated has no flags');
  ids.release(addr('10.0.1.1'), 'a');
  t.equal(ids.flagsOf(id), undefined, 'a freed ID has none');
  ids.acquire(addr('10.0.1.2'), 'a');
  ids.acquire(addr('10.0.1.3'), 'a');
  t.equal(ids.acquire(addr('10.0.1.4'), 'a'), id, 'reused once the others are taken');
  t.equal(ids.flagsOf(id), undefined, 'a reused ID starts without flags');
  t.throws(() => ids.acquire(addr('10.0.1.5'), 'a'), LBError, 'every ID in use');
});

t.test('restored IDs are kept, unreferenced until taken back, and forgotten on request', async (t) => {
  const ids = new BackendIds(100);
  ids.restore(addr('10.0.1.1'), 7, 1);
  ids.restore(addr('10.0.1.2'), 9, 255);
  t.equal(ids.flagsOf(7), 1);
  t.equal(ids.flagsOf(9), 255);
  t.same(ids.unreferenced(), [['10.0.1.1:8080/TCP', 7], ['10.0.1.2:8080/TCP', 9]]);
  t.equal(ids.acquire(addr('10.0.1.1'), 'fe'), 7, 'taken back with its ID');
  t.equal(ids.acquire(addr('10.0.1.3'), 'fe'), 10, 'new IDs after the restored ones');
  t.same(ids.unreferenced(), [['10.0.1.2:8080/TCP', 9]]);
  ids.forget('10.0.1.1:8080/TCP');
  t.equal(ids.idOf(addr('10.0.1.1')), 7, 'a referenced ID is not forgotten');
  ids.forget('10.0.1.2:8080/TCP');
  t.equal(ids.idOf(addr('10.0.1.2')), undefined);
  t.equal(ids.flagsOf(9), undefined);
  t.equal(ids.release(addr('10.0.1.1'), 'fe'), true);
});

t.test('IDs beyond the first 65,536 (a large --bpf-lb-map-max)', async (t) => {
  const ids = new BackendIds(70_000);
  let last = 0;
  for (let i = 0; i < 70_000; i++) last = ids.acquireKey(`k${i}`, 'fe');
  t.equal(last, 70_000);
  ids.setFlags(70_000, 2);
  t.equal(ids.flagsOf(70_000), 2);
  t.throws(() => ids.acquireKey('one more', 'fe'), LBError);
  t.equal(ids.releaseKey('k69999', 'fe'), true);
  t.equal(ids.acquireKey('one more', 'fe'), 70_000);
  ids.restore(addr('10.0.1.1'), 200_000, 0);
  t.equal(ids.flagsOf(200_000), 0, 'a restored ID above the size is kept too');
});
