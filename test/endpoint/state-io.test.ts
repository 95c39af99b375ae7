// The state directory's calls are chosen by its file system (synchronous on tmpfs, the thread pool
// elsewhere); both ways a regeneration leaves the same layout and a restart brings endpoints back.
import t from 'tap';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { testHive } from '../../src/hive/index.js';
import { statedirCell } from '../../src/cells/statedir/index.js';
import { endpointCell, EndpointAPIManagerToken, EndpointRestorerToken, EndpointStateStoreToken, type EndpointChangeRequest } from '../../src/cells/endpoint/index.js';
import { onTmpfs } from '../../src/lib/tmpfs.js';
import { mocks, request } from './mocks.js';

const shmIsTmpfs = existsSync('/dev/shm') && onTmpfs('/dev/shm');
const cases: Array<{ base: string; sync: boolean; skip: string | false }> = [
  { base: '/dev/shm', sync: true, skip: shmIsTmpfs ? false : '/dev/shm is not a tmpfs here' },
  { base: tmpdir(), sync: onTmpfs(tmpdir()), skip: false },
];

for (const { base, sync, skip } of cases) {
  t.test(`regenerations and a restart with the state directory in ${base} (${sync ? 'synchronous' : 'thread-pool'} calls)`, { skip }, async (t) => {
    const dir = mkdtempSync(join(base, 'cellium-ep-io-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const start = () => testHive(t, [statedirCell, endpointCell], { replace: mocks().replace, config: { 'state-dir': dir } });
    const one = await start();
    t.equal(one.get(EndpointStateStoreToken).io.sync, sync);
    const api = one.get(EndpointAPIManagerToken);
    const a = await api.createEndpoint({}, request(1) as EndpointChangeRequest);
    const b = await api.createEndpoint({}, request(2) as EndpointChangeRequest);
    await api.patchLabels({}, String(a.id), ['k8s:extra=1'], []); // a second regeneration swaps <id> out
    t.same(readdirSync(dir).sort(), [String(a.id), String(b.id)].sort(), 'no _next or _stale left behind');
    t.ok(existsSync(join(dir, String(a.id), 'ep_config.json')) && existsSync(join(dir, String(a.id), 'ep_config.h')), 'both files written');
    await one.hive.stop();
    const two = await start();
    const summary = await two.get(EndpointRestorerToken).done;
    t.same(summary.restored.sort(), [a.id, b.id].sort(), 'both endpoints restored');
  });
}
