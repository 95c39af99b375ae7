/**
 * What the layer rules of eslint.config.js say about the dynamic imports in the sources:
 * `no-restricted-imports` sees only static import and export declarations, so every `import('…')`
 * expression (and `import('…')` type) is found here with the TypeScript parser and its specifier
 * linted as a static import of the same file, under the same rules.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { ESLint } from 'eslint';

/** One dynamic import found in a source file. */
export interface DynamicImport {
  /** The file, relative to the repository root (`src/cli/commands/cluster.ts`). */
  readonly file: string;
  readonly line: number;
  /** The specifier, or undefined when it is not a string literal (then no rule can check it). */
  readonly spec: string | undefined;
}

/** A dynamic import a layer rule refuses (or that cannot be checked). */
export interface Violation extends DynamicImport {
  readonly message: string;
}

/** The dynamic imports of one source text. */
export function dynamicImports(file: string, text: string): DynamicImport[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const out: DynamicImport[] = [];
  const line = (n: ts.Node): number => sf.getLineAndCharacterOfPosition(n.getStart(sf)).line + 1;
  const literal = (e: ts.Node | undefined): string | undefined => (e && (ts.isStringLiteral(e) || ts.isNoSubstitutionTemplateLiteral(e)) ? e.text : undefined);
  const visit = (n: ts.Node): void => {
    if (ts.isCallExpression(n) && n.expression.kind === ts.SyntaxKind.ImportKeyword) out.push({ file, line: line(n), spec: literal(n.arguments[0]) });
    else if (ts.isImportTypeNode(n) && ts.isLiteralTypeNode(n.argument)) out.push({ file, line: line(n), spec: literal(n.argument.literal) });
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return out;
}

/** Every TypeScript file under `dir` (relative to `root`). */
export function sourceFiles(root: string, dir: string): string[] {
  return readdirSync(join(root, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => relative(root, join(e.parentPath, e.name)))
    .sort();
}

/**
 * The dynamic imports of `files` ({file, text}) that the layer rules refuse: each specifier is
 * linted as `import … from '<spec>'` at its file's path. A specifier that is not a string literal
 * is a violation too (no rule could check it).
 */
export async function dynamicImportViolations(files: readonly { readonly file: string; readonly text: string }[], eslint = new ESLint()): Promise<Violation[]> {
  const out: Violation[] = [];
  for (const { file, text } of files) {
    for (const d of dynamicImports(file, text)) {
      if (d.spec === undefined) {
        out.push({ ...d, message: 'import() of a computed specifier: the layer rules cannot check it (import a string literal)' });
        continue;
      }
      const [r] = await eslint.lintText(`import * as m from ${JSON.stringify(d.spec)};\nexport { m };\n`, { filePath: file });
      for (const m of r?.messages ?? []) if (m.ruleId === 'no-restricted-imports') out.push({ ...d, message: m.message });
    }
  }
  return out;
}

/** The violations in the repository's sources under `dirs`. */
export async function repositoryViolations(root: string, dirs: readonly string[]): Promise<Violation[]> {
  const files = dirs.flatMap((d) => sourceFiles(root, d)).map((file) => ({ file, text: readFileSync(join(root, file), 'utf8') }));
  return dynamicImportViolations(files);
}
