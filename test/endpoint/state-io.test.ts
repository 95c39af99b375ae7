// The state directory's calls are chosen by its file system (synchronous on tmpfs, the thread pool
// elsewhere); both ways a regeneration leaves the same layout and a restart brings endpoints back.
import t from 'tap';
import { existsSync, mkdtempSync, readdirSync, rmSync, statfsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { testHive } from '../../src/hive/index.js';
import { statedirCell } from '../../src/cells/statedir/index.js';
import { endpointCell, EndpointAPIManagerToken, EndpointRestorerToken, EndpointStateStoreToken, type EndpointChangeRequest } from '../../src/cells/endpoint/index.js';
import { onTmpfs } from '../../src/cells/endpoint/state-io.js';
import { mocks, request } from './mocks.js';

const TMPFS_MAGIC = 0x01021994;
const shmIsTmpfs = (() => {
  try {
    return statfsSync('/dev/shm').type === TMPFS_MAGIC;
  } catch {
    return false;
  }
})();

t.test('onTmpfs looks at the nearest existing directory', async (t) => {
  t.equal(onTmpfs('/proc/nope/deeper'), false, 'procfs is not tmpfs');
  if (shmIsTmpfs) t.equal(onTmpfs(`/dev/shm/cellium-missing-${process.pid}/state`), true, 'a directory still to be made under /dev/shm');
});

const roots: Array<[string, string | false]> = [
  ['/dev/shm (tmpfs: synchronous calls)', shmIsTmpfs ? false : '/dev/shm is not a tmpfs here'],
  [`${tmpdir()} (its own file system)`, false],
];
for (const [where, skip] of roots) {
  t.test(`regenerations and a restart with the state directory in ${where}`, { skip }, async (t) => {
    const base = where.startsWith('/dev/shm') ? '/dev/shm' : tmpdir();
    const dir = mkdtempSync(join(base, 'cellium-ep-io-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const start = async (m = mocks()) => {
      const h = await testHive(t, [statedirCell, endpointCell], { replace: m.replace, config: { 'state-dir': dir } });
      return h;
    };
    const one = await start();
    t.equal(one.get(EndpointStateStoreToken).io.sync, onTmpfs(dir), 'synchronous exactly on tmpfs');
    const api = one.get(EndpointAPIManagerToken);
    const a = await api.createEndpoint({}, request(1) as EndpointChangeRequest);
    const b = await api.createEndpoint({}, request(2) as EndpointChangeRequest);
    await api.patchLabels({}, String(a.id), ['k8s:extra=1'], []); // a second regeneration swaps <id> out
    t.same(readdirSync(dir).sort(), [String(a.id), String(b.id)].sort(), 'no _next or _stale left behind');
    t.ok(existsSync(join(dir, String(a.id), 'ep_config.json')) && existsSync(join(dir, String(a.id), 'ep_config.h')));
    await one.hive.stop();
    const two = await start();
    const summary = await two.get(EndpointRestorerToken).done;
    t.same(summary.restored.sort(), [a.id, b.id].sort(), 'both endpoints restored');
    await two.hive.stop();
  });
}
