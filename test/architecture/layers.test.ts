// The layer rules (eslint.config.js, docs/architecture.md) fail on violations: a library importing
// a cell, the generic BPF layer importing Cellium's maps, a cell reaching into another cell's
// internal file; the allowed imports pass. (npm test lints the whole tree with the same rules.)
import t from 'tap';
import { ESLint } from 'eslint';

const eslint = new ESLint();

async function messages(file: string, spec: string): Promise<string[]> {
  const [r] = await eslint.lintText(`import { x } from '${spec}';\nexport const y = x;\n`, { filePath: file });
  return (r?.messages ?? []).filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
}

t.test('libraries never import cells, commands or the CLI', async (t) => {
  for (const [file, spec] of [
    ['src/lib/x.ts', '../cells/endpoint/index.js'],
    ['src/datapath/x.ts', '../cells/datapath/select.js'],
    ['src/maps/ct/x.ts', '../../cells/identity/types.js'],
    ['src/api/x.ts', '../cli/main.js'],
    ['src/hive/x.ts', '../cells.js'],
    ['src/monitor/x.ts', '../cmd/agent.js'],
  ]) {
    t.match(await messages(file!, spec!), [/a library imports no cell, command or CLI/], `${file} -> ${spec}`);
  }
  t.same(await messages('src/maps/x.ts', '../lib/addr.js'), [], 'a library may import a library');
});

t.test('src/bpf stays generic', async (t) => {
  t.match(await messages('src/bpf/x.ts', '../maps/index.js'), [/generic libbpf layer/]);
  t.match(await messages('src/bpf/x.ts', '../datapath/types.js'), [/generic libbpf layer/]);
  t.same(await messages('src/bpf/x.ts', './bpf-map.js'), []);
});

t.test("a cell imports another cell through its index.ts or types.ts only", async (t) => {
  t.match(await messages('src/cells/policy/x.ts', '../endpoint/manager.js'), [/through its index.ts or types.ts/]);
  t.match(await messages('src/cells/policy/x.ts', '../api-server/ratelimit/set.js'), [/through its index.ts or types.ts/]);
  t.match(await messages('src/cells/datapath-bpf/lxc/x.ts', '../../endpoint/manager.js'), [/through its index.ts or types.ts/]);
  for (const [file, spec] of [
    ['src/cells/policy/x.ts', '../endpoint/index.js'],
    ['src/cells/policy/x.ts', '../identity/types.js'],
    ['src/cells/policy/x.ts', './repository.js'],
    ['src/cells/policy/x.ts', '../../hive/cell.js'],
    ['src/cells/policy/x.ts', '../../lib/addr.js'],
    ['src/cells/datapath-bpf/lxc/x.ts', '../loader.js'],
    ['src/cells/datapath-bpf/lxc/x.ts', '../../datapath/index.js'],
    ['src/cells/datapath-bpf/lxc/x.ts', '../../../maps/index.js'],
  ]) {
    t.same(await messages(file!, spec!), [], `${file} -> ${spec} is allowed`);
  }
});

t.test('src/lib is below the hive, and the CLI imports no cell', async (t) => {
  t.match(await messages('src/lib/reconciler/x.ts', '../../hive/errors.js'), [/src\/lib is below the hive/]);
  t.match(await messages('src/lib/x.ts', '../cells/kvstore/index.js'), [/a library imports no cell/]);
  t.same(await messages('src/lib/reconciler/x.ts', '../errors.js'), []);
  t.match(await messages('src/cli/commands/x.ts', '../../cells/kvstore/index.js'), [/the CLI talks to the agent through its API/]);
  t.same(await messages('src/cli/commands/x.ts', '../../lib/etcd-config.js'), []);
  t.same(await messages('src/cli/commands/x.ts', '../../maps/index.js'), []);
});

t.test('the datapath contract imports no implementation and no map', async (t) => {
  t.match(await messages('src/datapath/types.ts', './model/verdict.js'), [/the datapath contract/]);
  t.match(await messages('src/datapath/types.ts', './memory/lb-maps.js'), [/the datapath contract/]);
  t.match(await messages('src/datapath/types.ts', '../maps/policy/key.js'), [/the datapath contract/]);
  t.match(await messages('src/datapath/types.ts', '../cells/datapath/index.js'), [/a library imports no cell/]);
  t.same(await messages('src/datapath/types.ts', './lb-maps.js'), []);
  t.same(await messages('src/datapath/types.ts', './map-names.js'), []);
  t.same(await messages('src/datapath/model/verdict.ts', '../../maps/policy/key.js'), [], 'the model may use a map key');
});

t.test('cells use the datapath contract, not a datapath implementation cell', async (t) => {
  t.match(await messages('src/cells/monitor/x.ts', '../datapath-bpf/index.js'), [/a cell uses the datapath contract/]);
  t.match(await messages('src/cells/loadbalancer/x.ts', '../datapath-memory/index.js'), [/a cell uses the datapath contract/]);
  t.match(await messages('src/cells/endpoint/sub/x.ts', '../../datapath-bpf/types.js'), [/a cell uses the datapath contract/]);
  t.same(await messages('src/cells/monitor/x.ts', '../../datapath/types.js'), []);
  t.same(await messages('src/cells/loadbalancer/x.ts', '../../datapath/bpf-config.js'), []);
  t.same(await messages('src/cells/monitor/x.ts', '../datapath/index.js'), [], 'the selection cell through its index');
  t.same(await messages('src/cells/datapath-bpf/x.ts', '../datapath/index.js'), [], "the datapath's own cells");
  t.match(await messages('src/cells/datapath-bpf/x.ts', '../datapath-memory/datapath.js'), [/through its index.ts or types.ts/]);
});
