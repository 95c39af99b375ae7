import t from 'tap';
import { HealthRegistry } from '../../src/hive/index.js';

t.test('scopes form a tree; parents show the worst child; the tree is observable', async (t) => {
  const reg = new HealthRegistry();
  const seen: string[] = [];
  const sub = reg.tree$.subscribe((n) => seen.push(n.level));
  const ep = reg.scopeAt(['control-plane', 'endpoint-manager']);
  const ipam = reg.scopeAt(['control-plane', 'ipam']);
  ep.ok('running');
  ipam.ok('pool ready');
  let snap = reg.snapshot();
  t.equal(snap.children[0]?.name, 'control-plane');
  t.equal(snap.children[0]?.level, 'ok');
  const gc = ep.scope('gc');
  gc.degraded('interface lookup failed', new Error('EACCES'));
  snap = reg.snapshot();
  const cp = snap.children[0]!;
  t.equal(cp.level, 'degraded');
  const epNode = cp.children.find((c) => c.name === 'endpoint-manager')!;
  t.equal(epNode.children[0]?.error, 'EACCES');
  t.match(epNode.children[0]?.updatedAt, /^\d{4}-\d\d-\d\dT/);
  gc.close();
  t.equal(reg.snapshot().children[0]?.level, 'ok', 'closing the degraded scope clears it');
  ipam.stopped('shut down');
  t.equal(reg.snapshot().children[0]?.children.find((c) => c.name === 'ipam')?.level, 'stopped');
  t.ok(seen.length >= 5, 'every change was published');
  sub.unsubscribe();
});
