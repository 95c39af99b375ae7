// --identity-allocation-mode chooses among the backends other cells offer: crd when offered, else
// (crd without Kubernetes) the kvstore's, else the embedded file; kvstore without etcd is refused
// at start naming both flags; only the chosen backend is made.
import t, { type Test } from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { provideInto } from '../../src/hive/cell.js';
import { invoke, testHive } from '../../src/hive/index.js';
import { statedirCell } from '../../src/cells/statedir/index.js';
import { EmbeddedBackend, identityCell, IdentityBackendChoicesToken, IdentityBackendToken, type IdentityBackend, type IdentityBackendChoice } from '../../src/cells/identity/index.js';

function fake(name: string, made: string[]): () => IdentityBackend {
  return () => {
    made.push(name);
    const e = new EmbeddedBackend(join(tmpdir(), `never-${name}.json`));
    return Object.assign(Object.create(e) as IdentityBackend, { name });
  };
}

async function chosen(t: Test, mode: string | undefined, offers: [string, boolean][]): Promise<{ name: string; made: string[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'cellium-idmode-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const made: string[] = [];
  const cells = offers.map(([m, offered]) => provideInto(IdentityBackendChoicesToken, (): IdentityBackendChoice => ({ mode: m as 'crd' | 'kvstore', create: offered ? fake(m, made) : undefined }), {}));
  const h = await testHive(t, [statedirCell, identityCell, ...cells, invoke('use', (_b: IdentityBackend) => undefined, IdentityBackendToken)], {
    config: { 'state-dir': dir, ...(mode ? { 'identity-allocation-mode': mode } : {}) }, start: false,
  });
  return { name: h.get(IdentityBackendToken).name, made };
}

t.test('crd (the default) is chosen when offered; only it is made', async (t) => {
  t.same(await chosen(t, undefined, [['kvstore', true], ['crd', true]]), { name: 'crd', made: ['crd'] });
});

t.test('crd without Kubernetes: the kvstore\'s if offered, else the embedded file', async (t) => {
  t.same(await chosen(t, 'crd', [['kvstore', true], ['crd', false]]), { name: 'kvstore', made: ['kvstore'] });
  t.same(await chosen(t, 'crd', [['kvstore', false], ['crd', false]]), { name: 'embedded', made: [] });
});

t.test('kvstore chosen: etcd even with Kubernetes; without etcd refused naming the flags', async (t) => {
  t.same(await chosen(t, 'kvstore', [['kvstore', true], ['crd', true]]), { name: 'kvstore', made: ['kvstore'] });
  await t.rejects(chosen(t, 'kvstore', [['kvstore', false], ['crd', true]]), /--identity-allocation-mode=kvstore needs --kvstore=etcd/);
});

t.test('a mode that is not one: refused naming the values', async (t) => {
  await t.rejects(chosen(t, 'etcd', []), /identity-allocation-mode.*expected one of crd, kvstore/);
});
