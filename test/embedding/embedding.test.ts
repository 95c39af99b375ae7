import t from 'tap';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

const built = existsSync(join(import.meta.dirname, '../../dist/src/cells/ipam/index.js'));

t.test('a tool embeds the IPAM cell through the package exports, with its own replacement', { skip: built ? false : 'dist/ not built: run npm run build (npm test builds it)' }, async (t) => {
  const { allocateWithCellium } = await import('../../docs/examples/embedding/ipam-tool.js');
  const { ips, jobs } = await allocateWithCellium('192.168.77.0/29', 'my-tool', 3);
  t.same(ips, ['192.168.77.2', '192.168.77.3', '192.168.77.4'], 'gateway .1 skipped, addresses from the tool\'s range');
  t.same(jobs, ['timer ipam-expiration'], 'the cell used the tool\'s replacement for Jobs');
});

t.test('the package exports map cellium/hive and cellium/cells/<cell>', async (t) => {
  const pkg = (await import('../../package.json', { with: { type: 'json' } })).default as { exports: Record<string, unknown> };
  t.ok(pkg.exports['./hive']);
  t.ok(pkg.exports['./cells/*']);
});
