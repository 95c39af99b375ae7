// A cell's types.ts holds its types, interfaces, tokens, constants and the error classes its
// interfaces throw: no function and no other class (those go through index.ts). A violating
// sample fails; every cell's types.ts passes.
import t from 'tap';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runtimeExports } from './cell-types.js';

const root = join(import.meta.dirname, '../..');

t.test('functions and classes in a types.ts are found, through re-exports too', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cellium-arch-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'package.json'), '{"type":"module"}');
  writeFileSync(join(dir, 'impl.ts'), [
    'export function listen(): void {}',
    'export class Server {}',
    'export class ThingError extends Error {}',
    'export class NotFoundError extends ThingError {}',
  ].join('\n'));
  writeFileSync(join(dir, 'types.ts'), [
    "export { listen, Server, ThingError, NotFoundError } from './impl.js';",
    'export interface Thing { readonly id: number }',
    "export const ThingToken = Symbol('Thing');",
    "export const LIMITS = { a: 1 } as const;",
    'export const parse = (s: string): number => Number(s);',
    'export type Id = number;',
  ].join('\n'));
  const file = join(dir, 'types.ts');
  t.same(runtimeExports([file]).map((x) => `${x.name} ${x.kind}`).sort(), ['Server class', 'listen function', 'parse function']);
});

t.test("every cell's types.ts holds no runtime code", async (t) => {
  const files = readdirSync(join(root, 'src/cells')).map((c) => join(root, 'src/cells', c, 'types.ts')).filter((f) => existsSync(f));
  t.ok(files.length > 5, 'the cells have types.ts files');
  t.same(runtimeExports(files).map((x) => `${x.file.slice(root.length + 1)}: ${x.name} (${x.kind}; export it from index.ts)`), []);
});
