// Registers hooks.mjs (TypeScript transpiled with a cache on disk) for this process and the
// processes it starts with the same NODE_OPTIONS. The cache lives in node_modules/.cache/cellium-ts
// (removed with node_modules; CELLIUM_TS_CACHE names another directory).
import { register } from 'node:module';
import { fileURLToPath } from 'node:url';

const root = new URL('../../', import.meta.url);
const cacheDir = process.env.CELLIUM_TS_CACHE || fileURLToPath(new URL('node_modules/.cache/cellium-ts', root));
register('./hooks.mjs', import.meta.url, { data: { cacheDir, tsconfig: fileURLToPath(new URL('tsconfig.json', root)) } });
