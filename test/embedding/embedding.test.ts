import t from 'tap';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const built = existsSync(join(import.meta.dirname, '../../dist/src/cells/ipam/index.js'));
const skip = built ? false : 'dist/ not built: run npm run build (npm test builds it)';

t.test('a tool embeds the IPAM cell through the package exports, with its own replacement', { skip }, async (t) => {
  const { allocateWithCellium } = await import('../../docs/examples/embedding/ipam-tool.js');
  const { ips, jobs } = await allocateWithCellium('192.168.77.0/29', 'my-tool', 3);
  t.same(ips, ['192.168.77.2', '192.168.77.3', '192.168.77.4'], 'gateway .1 skipped, addresses from the tool\'s range');
  t.same(jobs, ['timer ipam-expiration'], 'the cell used the tool\'s replacement for Jobs');
});

t.test('a tool with its own inversify container loads the identity and policy cells into it', { skip }, async (t) => {
  const { checkWithLoadedCells } = await import('../../docs/examples/embedding/inversify-tool.js');
  const dir = mkdtempSync(join(tmpdir(), 'cellium-embed-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const r = await checkWithLoadedCells(dir);
  t.equal(r.allowed, 'allowed', 'the rule the tool imported allows its port');
  t.equal(r.other, 'denied', 'and only that port (default deny once the rule selects the endpoint)');
  t.ok(r.identities.every((id) => id >= 256 && id <= 65535), 'global identities from the real allocator');
  const stored = JSON.parse(readFileSync(join(dir, 'identities.json'), 'utf8')) as unknown;
  t.match(JSON.stringify(stored), /k8s:app=client/, 'the identity cell kept its state in the directory the tool bound');
});

t.test('a hive\'s public providers load into another container as a ContainerModule', { skip }, async (t) => {
  const { allocateThroughModule } = await import('../../docs/examples/embedding/inversify-tool.js');
  const dir = mkdtempSync(join(tmpdir(), 'cellium-embed-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const [web] = await allocateThroughModule(dir, ['web']);
  t.ok(web! >= 256, 'a global identity');
  const [db, webAgain] = await allocateThroughModule(dir, ['db', 'web']);
  t.equal(webAgain, web, 'web kept its identity across the restart: the cell\'s start hook (restore) ran');
  t.not(db, web, 'so the new label set got another one');
});

t.test('the package exports map cellium/hive and cellium/cells/<cell>', async (t) => {
  const pkg = (await import('../../package.json', { with: { type: 'json' } })).default as { exports: Record<string, unknown> };
  t.ok(pkg.exports['./hive']);
  t.ok(pkg.exports['./cells/*']);
});
