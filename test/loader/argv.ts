/**
 * The node arguments that run TypeScript the way the tests run (test/loader/register.mjs): for a
 * test that starts a child `node` on a .ts file (`[process.execPath, ...TS_LOADER_ARGV, file]`).
 */
export const TS_LOADER_ARGV: readonly string[] = [`--import=${new URL('./register.mjs', import.meta.url).href}`];
