// Issue 23's cell contracts hold for the whole tree (src/cells and src/cells.ts): named
// dependencies for every cell function with more than one, and no raw `.subscribe(` outside a hive
// job unless the line above says why (`// not a job: <why>`). Each check is shown failing on a
// small sample and passing on the right form.
import t from 'tap';
import { fileURLToPath } from 'node:url';
import { checkSource, checkTree, unitOf } from './cell-contracts.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

t.test('named dependencies: more than one positional token fails, naming file:line and the fix', async (t) => {
  const bad = [
    "import { provide } from '../../hive/cell.js';",
    'export const c = provide(XToken, newX, AToken, BToken);',
  ].join('\n');
  const v = checkSource('src/cells/x/cell.ts', bad);
  t.equal(v.length, 1);
  t.match(v[0], { rule: 'named-deps', file: 'src/cells/x/cell.ts', line: 2 });
  t.match(v[0]!.message, /^src\/cells\/x\/cell\.ts:2: provide\(\.\.\.\) takes 2 positional dependency tokens; fix: .*DepsValues<typeof xDeps>/);
  for (const [what, code] of [
    ['providePrivate', "providePrivate(T, (a: A, b: B) => new X(a, b), AToken, BToken);"],
    ['provideInto', 'provideInto(G, newX,\n  AToken, BToken, CToken);'],
    ['invoke', "invoke('x', (_a: A, _b: B) => undefined, AToken, BToken);"],
    ['spread tokens', 'provide(T, newX, ...tokens);'],
  ] as const) {
    t.match(checkSource('s.ts', code).map((x) => x.rule), ['named-deps'], `${what} with positional tokens fails`);
  }
});

t.test('named dependencies: the object form, one token or none pass', async (t) => {
  const good = [
    'const xDeps = { a: AToken, b: BToken, c: CToken } as const;',
    'function newX(d: DepsValues<typeof xDeps>): X { return new X(d.a, d.b, d.c); }',
    'provide(XToken, newX, xDeps);',
    'providePrivate(YToken, newY, { a: AToken, b: BToken });',
    'provideInto(G, (a: A) => a, AToken);',
    "invoke('x', (_x: X) => undefined, XToken);",
    'provide(ZToken, newZ);',
    "invoke('y', ({ x }: DepsValues<typeof yDeps>) => x, yDeps);",
    '// provide(T, f, A, B) in a comment, and in a string:',
    "const s = 'provide(T, f, A, B)';",
  ].join('\n');
  t.same(checkSource('src/cells/x/cell.ts', good), []);
});

t.test('streams are jobs: a raw .subscribe( fails, naming file:line and the fix', async (t) => {
  const bad = [
    'export class X {',
    '  constructor(alloc: IdentityAllocator) {',
    '    alloc.changes$.subscribe((c) => this.onIdentity(c));',
    '  }',
    '}',
    '// a comment that says something else',
    'merge(a$, b$)',
    '  .subscribe(() => undefined);',
  ].join('\n');
  const v = checkSource('src/cells/x/x.ts', bad);
  t.same(v.map((x) => [x.rule, x.line]), [['streams-are-jobs', 3], ['streams-are-jobs', 8]]);
  t.match(v[0]!.message, /^src\/cells\/x\/x\.ts:3: a raw \.subscribe\( outside a hive job; fix: .*jobs\.observer\('<name>', source\$, .*\{ immediate: true, sync: true \}.*\/\/ not a job: <why>/);
  t.equal(checkSource('s.ts', '// not a job:\nx$.subscribe(f);').length, 1, 'a marker without a reason does not count');
  t.equal(checkSource('s.ts', '// not a job: per request\n\nx$.subscribe(f);').length, 1, 'the marker must be on the line right above');
});

t.test('streams are jobs: an observer job, or a marked subscription, passes', async (t) => {
  const good = [
    "jobs.observer('identity-changes', alloc.changes$, (c) => cache.onIdentity(c), { immediate: true, sync: true });",
    'const o = new Observable<number>((sub) => {',
    '  // not a job: the Observable implementation hands its subscriber to the source',
    '  const inner = source.subscribe(sub);',
    '  return () => inner.unsubscribe();',
    '});',
    "const text = 'x$.subscribe(f)'; // .subscribe( in a string or comment is no call",
  ].join('\n');
  t.same(checkSource('src/cells/x/x.ts', good), []);
});

t.test('the tree keeps both contracts: every cell and src/cells.ts', async (t) => {
  const all = checkTree(ROOT);
  t.same(all.map((v) => v.message), [], 'no violation anywhere in src/cells or src/cells.ts');
});

t.test('unitOf names the cell folder or src/cells.ts', async (t) => {
  t.equal(unitOf('src/cells/datapath-bpf/lxc/loader.ts'), 'src/cells/datapath-bpf');
  t.equal(unitOf('src/cells/policy/cell.ts'), 'src/cells/policy');
  t.equal(unitOf('src/cells.ts'), 'src/cells.ts');
});
