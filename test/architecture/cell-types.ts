/**
 * What "types.ts" means for a cell (the file the layer rules let other cells import besides
 * index.ts): its types, interfaces, tokens and constants, and the error classes its interfaces
 * throw (callers catch them), never a function or another class: runtime code goes through
 * index.ts. Found with the TypeScript checker, so re-exports are followed to what they name.
 */
import ts from 'typescript';

/** A runtime export a cell's types.ts must not have. */
export interface RuntimeExport {
  readonly file: string;
  readonly name: string;
  readonly kind: 'function' | 'class';
}

function isErrorClass(checker: ts.TypeChecker, s: ts.Symbol): boolean {
  const seen = new Set<ts.Type>();
  const walk = (t: ts.Type): boolean => {
    if (seen.has(t)) return false;
    seen.add(t);
    if (t.symbol?.name === 'Error' && !(t.symbol.flags & ts.SymbolFlags.Class)) return true;
    if (!(t.flags & ts.TypeFlags.Object) || !((t as ts.ObjectType).objectFlags & (ts.ObjectFlags.Class | ts.ObjectFlags.Interface))) return false;
    return (checker.getBaseTypes(t as ts.InterfaceType) ?? []).some(walk);
  };
  return walk(checker.getDeclaredTypeOfSymbol(s));
}

/** The functions and non-error classes the given types.ts files declare or re-export. */
export function runtimeExports(files: readonly string[]): RuntimeExport[] {
  const program = ts.createProgram([...files], {
    module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, target: ts.ScriptTarget.ES2022,
    strict: true, noEmit: true, skipLibCheck: true, types: ['node'], experimentalDecorators: true,
  });
  const checker = program.getTypeChecker();
  const out: RuntimeExport[] = [];
  for (const file of files) {
    const sf = program.getSourceFile(file);
    const mod = sf && checker.getSymbolAtLocation(sf);
    if (!mod) throw new Error(`${file}: not a module the TypeScript program could read`);
    for (const exp of checker.getExportsOfModule(mod)) {
      const s = exp.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exp) : exp;
      const fnValue = (s.declarations ?? []).some((d) => ts.isVariableDeclaration(d) && !!d.initializer && (ts.isArrowFunction(d.initializer) || ts.isFunctionExpression(d.initializer)));
      if (s.flags & ts.SymbolFlags.Function || fnValue) out.push({ file, name: exp.name, kind: 'function' });
      else if (s.flags & ts.SymbolFlags.Class && !isErrorClass(checker, s)) out.push({ file, name: exp.name, kind: 'class' });
    }
  }
  return out;
}
