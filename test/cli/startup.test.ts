// What a `cellium` call loads before it runs its command: not the etcd client (etcd3, gRPC,
// protobufjs) nor, with it, the kvstore cell, which only `cellium kvstore get` needs. They made
// every call of the CLI (a dozen per demo, one per readiness probe) start several times slower
// (497 CommonJS modules loaded, 15 of them etcd3's; 79 without).
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

const root = join(import.meta.dirname, '../..');
const main = join(root, 'dist/src/cli/main.js');

t.test('the CLI does not load the etcd client', { skip: existsSync(main) ? false : 'dist/ not built (npm run build)' }, async (t) => {
  const script = `
    import { createRequire } from 'node:module';
    await import(${JSON.stringify(main)});
    const loaded = Object.keys(createRequire(import.meta.url).cache);
    console.log(JSON.stringify(loaded));`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 });
  t.equal(r.status, 0, r.stderr);
  const loaded = JSON.parse(r.stdout) as string[];
  t.ok(loaded.length > 0, 'the CommonJS modules it loaded are listed');
  t.same(loaded.filter((f) => /\/node_modules\/(etcd3|@grpc|protobufjs)\//.test(f)), [], 'no etcd client');
});
