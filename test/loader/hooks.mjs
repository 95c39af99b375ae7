// Module hooks that run TypeScript test files: each .ts module is transpiled by TypeScript itself
// (transpileModule with the project's tsconfig.json, as ts-node's transpile-only mode does: the same
// decorator metadata, the same output) and the result is kept on disk, keyed by the file's content,
// the compiler's version, tsconfig.json and this file. A test process whose modules are all cached never loads
// the compiler. Specifiers written as './x.js' (NodeNext style) find './x.ts'.
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** @type {{ cacheDir: string, tsconfig: string }} */
let settings;
/** @type {string} */
let salt;
/** @type {any} */
let ts;
/** @type {any} */
let compilerOptions;

/** Receives the cache directory and tsconfig.json's path from register.mjs. */
export function initialize(data) {
  settings = data;
  const require = createRequire(data.tsconfig);
  const version = JSON.parse(readFileSync(require.resolve('typescript/package.json'), 'utf8')).version;
  // this file is in the key too: a change to how modules are transpiled (options, source maps)
  // must not be served from entries the old code wrote
  salt = `${version}\0${readFileSync(data.tsconfig, 'utf8')}\0${readFileSync(new URL(import.meta.url), 'utf8')}\0`;
}

const TS_URL = /\.(ts|mts|cts)(?=[?#]|$)/;
// the extension, before a query or hash (tap's t.mockImport resolves './x.js?tapmock=...')
const JS_SPECIFIER = /\.(js|mjs|cjs)(?=[?#]|$)/;

/** './x.js' that does not exist resolves to './x.ts' beside it (the specifiers tsc's NodeNext wants). */
export async function resolve(specifier, context, next) {
  try {
    return await next(specifier, context);
  } catch (err) {
    const relative = specifier.startsWith('.') || specifier.startsWith('/') || specifier.startsWith('file:');
    if (err?.code !== 'ERR_MODULE_NOT_FOUND' || !relative || !JS_SPECIFIER.test(specifier)) throw err;
    return next(specifier.replace(JS_SPECIFIER, (ext) => ext.replace('js', 'ts')), context);
  }
}

/** Loads a .ts module from the cache, transpiling it (and caching the result) on a miss. */
export async function load(url, context, next) {
  if (!url.startsWith('file:') || !TS_URL.test(url)) return next(url, context);
  const path = fileURLToPath(url.replace(/[?#].*$/, ''));
  const source = await readFile(path, 'utf8');
  const commonjs = path.endsWith('.cts');
  const key = createHash('sha256').update(salt).update(path).update('\0').update(source).digest('hex');
  const cached = join(settings.cacheDir, key.slice(0, 2), `${key}.js`);
  let output;
  try {
    output = readFileSync(cached, 'utf8');
  } catch {
    output = await transpile(path, source, commonjs);
    try {
      mkdirSync(dirname(cached), { recursive: true });
      const temp = `${cached}.${process.pid}.tmp`;
      writeFileSync(temp, output);
      renameSync(temp, cached); // atomic: a process reading at the same time sees all of it or nothing
    } catch {
      // a cache this process may not write (a test's child running as nobody): it runs uncached
    }
  }
  return { format: commonjs ? 'commonjs' : 'module', source: output, shortCircuit: true };
}

async function transpile(path, source, commonjs) {
  if (ts === undefined) {
    ts = (await import(createRequire(settings.tsconfig).resolve('typescript'))).default;
    const read = ts.readConfigFile(settings.tsconfig, ts.sys.readFile);
    if (read.error) throw new Error(`${settings.tsconfig}: ${ts.flattenDiagnosticMessageText(read.error.messageText, '\n')}`);
    compilerOptions = ts.parseJsonConfigFileContent(read.config, ts.sys, dirname(settings.tsconfig)).options;
  }
  const out = ts.transpileModule(source, {
    fileName: path,
    reportDiagnostics: false,
    compilerOptions: {
      ...compilerOptions,
      // the package is "type": "module": .ts is ESM, .cts CommonJS (NodeNext decides so from package.json,
      // which transpileModule does not read)
      module: commonjs ? ts.ModuleKind.CommonJS : ts.ModuleKind.ESNext,
      moduleResolution: ts.ModuleResolutionKind.Bundler,
      declaration: false,
      declarationMap: false,
      sourceMap: true,
      inlineSourceMap: false,
      inlineSources: true,
      noEmit: false,
    },
  });
  // the map names the file by its URL, so stack traces (and tap's t.mockImport, which resolves
  // specifiers from the caller's stack frame) see the .ts file where it is, not relative to outDir
  const map = JSON.parse(out.sourceMapText);
  map.sources = [pathToFileURL(path).href];
  delete map.sourceRoot;
  const code = out.outputText.replace(/\n\/\/# sourceMappingURL=.*\s*$/, '\n');
  return `${code}//# sourceMappingURL=data:application/json;base64,${Buffer.from(JSON.stringify(map)).toString('base64')}\n`;
}
