// The cell contracts of issue 23, read from the TypeScript syntax tree (not by regexes):
// (a) a provide/providePrivate/provideInto/invoke with more than one dependency names them in one
//     object (`provide(T, newX, xDeps)`), never as positional tokens;
// (b) a `.subscribe(` in a cell is a hive job, unless the line above says why it is not
//     (`// not a job: <why>`: inside an Observable's implementation, or a per-request subscription
//     torn down with its HTTP response).
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

/** One broken contract, with where it is and how to fix it. */
export interface Violation {
  readonly rule: 'named-deps' | 'streams-are-jobs';
  readonly file: string;
  readonly line: number;
  readonly message: string;
}

/** The cell functions whose dependencies follow their first two arguments (token or name, then the constructor or function). */
const CELL_CALLS = new Set(['provide', 'providePrivate', 'provideInto', 'invoke']);

/** The marker that lets a raw subscription stand, on the line above it. */
const NOT_A_JOB = /^\s*\/\/ not a job: \S/;

/** The name a call is made by: `provide(...)` or `x.provide(...)`. */
function calleeName(call: ts.CallExpression): string | undefined {
  const e = call.expression;
  if (ts.isIdentifier(e)) return e.text;
  if (ts.isPropertyAccessExpression(e)) return e.name.text;
  return undefined;
}

/** Checks one file's text; `file` names it in the messages. */
export function checkSource(file: string, text: string): Violation[] {
  const src = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const lines = text.split('\n');
  const out: Violation[] = [];
  const lineOf = (node: ts.Node): number => src.getLineAndCharacterOfPosition(node.getStart(src)).line + 1;
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node)) {
      const name = calleeName(node);
      if (name && CELL_CALLS.has(name) && ts.isIdentifier(node.expression)) {
        const deps = node.arguments.slice(2);
        const positional = deps.length > 1 || deps.some((d) => ts.isSpreadElement(d));
        if (positional) {
          const line = lineOf(node);
          out.push({
            rule: 'named-deps', file, line,
            message: `${file}:${line}: ${name}(...) takes ${deps.length} positional dependency tokens; fix: write them once as an object, ` +
              '`const xDeps = { a: AToken, b: BToken } as const;` with `function newX(d: DepsValues<typeof xDeps>)`, and pass `xDeps` as the one dependency argument',
          });
        }
      }
      if (name === 'subscribe' && ts.isPropertyAccessExpression(node.expression)) {
        const line = src.getLineAndCharacterOfPosition(node.expression.name.getStart(src)).line + 1;
        if (!NOT_A_JOB.test(lines[line - 2] ?? '')) {
          out.push({
            rule: 'streams-are-jobs', file, line,
            message: `${file}:${line}: a raw .subscribe( outside a hive job; fix: run it as an observer job with a name, health and stop, ` +
              "`jobs.observer('<name>', source$, (v) => ..., { immediate: true, sync: true })` (JobsToken of the module); inside an Observable's " +
              'implementation or a per-request subscription, put `// not a job: <why>` on the line above instead',
          });
        }
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(src);
  return out;
}

/** Every .ts file under `dir`, recursively. */
function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return tsFiles(p);
    return e.isFile() && e.name.endsWith('.ts') ? [p] : [];
  });
}

/** Checks every .ts under `<root>/src/cells` and `<root>/src/cells.ts`; files are named relative to `root`. */
export function checkTree(root: string): Violation[] {
  const files = [...tsFiles(join(root, 'src', 'cells')), join(root, 'src', 'cells.ts')];
  return files.flatMap((f) => checkSource(relative(root, f), readFileSync(f, 'utf8')));
}

/** The cell folder (`src/cells/<name>`) or file (`src/cells.ts`) a violation is in. */
export function unitOf(file: string): string {
  const parts = file.split(/[\\/]/);
  return parts[1] === 'cells' && parts.length > 3 ? parts.slice(0, 3).join('/') : file;
}
