// The layer rules hold for dynamic import() too: eslint's no-restricted-imports sees only static
// imports, so import-scan.ts finds every import('…') in src and lints its specifier under the same
// rules. A violating sample fails; the sources have none.
import t from 'tap';
import { join } from 'node:path';
import { dynamicImports, dynamicImportViolations, repositoryViolations } from './import-scan.js';

const root = join(import.meta.dirname, '../..');

t.test('finds import() expressions and import() types, with their lines', async (t) => {
  const text = [
    "const a = await import('../../lib/addr.js');",
    "type B = import('../../hive/cell.js').Cell;",
    'const c = await import(name);',
    "import { d } from './static.js';",
  ].join('\n');
  t.same(dynamicImports('src/x.ts', text), [
    { file: 'src/x.ts', line: 1, spec: '../../lib/addr.js' },
    { file: 'src/x.ts', line: 2, spec: '../../hive/cell.js' },
    { file: 'src/x.ts', line: 3, spec: undefined },
  ]);
});

t.test('a dynamic import that breaks a layer rule fails, with the rule\'s message', async (t) => {
  const v = await dynamicImportViolations([
    { file: 'src/cli/commands/x.ts', text: "export const f = () => import('../../cells/kvstore/index.js');" },
    { file: 'src/lib/x.ts', text: "export const f = () => import('../hive/errors.js');" },
    { file: 'src/maps/x.ts', text: "export const f = () => import('../cells/endpoint/index.js');" },
    { file: 'src/cells/policy/x.ts', text: "export const f = () => import('../endpoint/manager.js');" },
    { file: 'src/cells/monitor/x.ts', text: "export const f = () => import('../datapath-bpf/index.js');" },
    { file: 'src/datapath/x.ts', text: "export const f = () => import('./memory/lb-maps.js');" },
    { file: 'src/cli/commands/y.ts', text: 'export const f = (m: string) => import(m);' },
  ]);
  t.match(v.map((x) => `${x.file}: ${x.message}`), [
    /^src\/cli\/commands\/x.ts: .*the CLI talks to the agent through its API/,
    /^src\/lib\/x.ts: .*src\/lib is below the hive/,
    /^src\/maps\/x.ts: .*a library imports no cell/,
    /^src\/cells\/policy\/x.ts: .*import another cell through its index.ts or types.ts/,
    /^src\/cells\/monitor\/x.ts: .*a cell uses the datapath contract/,
    /^src\/datapath\/x.ts: .*src\/datapath\/\*.ts is the datapath contract/,
    /^src\/cli\/commands\/y.ts: .*import\(\) of a computed specifier/,
  ]);
  t.equal(v.length, 7);
});

t.test('allowed dynamic imports pass', async (t) => {
  t.same(await dynamicImportViolations([
    { file: 'src/cli/commands/x.ts', text: "export const f = () => Promise.all([import('etcd3'), import('../../lib/etcd-config.js'), import('../../maps/index.js')]);" },
    { file: 'src/cells/policy/x.ts', text: "export const f = () => import('../endpoint/index.js');" },
    { file: 'src/cells/datapath-bpf/x.ts', text: "export const f = () => import('../datapath/index.js');" },
  ]), []);
});

t.test('no dynamic import in src breaks a layer rule', async (t) => {
  const v = await repositoryViolations(root, ['src']);
  t.same(v.map((x) => `${x.file}:${x.line} import('${x.spec}'): ${x.message}`), []);
});
