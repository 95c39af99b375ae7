// The CNI server's defaults by user: root gets the shim's /var/run/cellium/delete-queue; any other
// user a directory of their own beside the per-user state directory, never a root-owned or
// working-directory path (an agent started by a user from any directory starts without errors).
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { cniServerConfigSchema, defaultDeleteQueueDir } from '../../src/cells/cni-server/index.js';
import { defaultStateDir } from '../../src/cells/statedir/index.js';

const AGENT = join(import.meta.dirname, '../../bin/cellium-agent.js');

t.test('--cni-delete-queue-dir defaults by user', async (t) => {
  t.equal(defaultDeleteQueueDir(0), '/var/run/cellium/delete-queue', "root: where the shim queues DELs");
  t.equal(defaultDeleteQueueDir(1000, { XDG_STATE_HOME: '/home/u/.state' }, '/home/u'), '/home/u/.state/cellium/delete-queue', 'XDG_STATE_HOME first');
  t.equal(defaultDeleteQueueDir(1000, {}, '/home/u'), '/home/u/.local/state/cellium/delete-queue', 'else under ~/.local/state');
  t.equal(defaultDeleteQueueDir(1000, { XDG_STATE_HOME: 'rel' }, '/home/u'), '/home/u/.local/state/cellium/delete-queue', 'a relative XDG_STATE_HOME is ignored');
  t.equal(defaultDeleteQueueDir(1000, {}, '/home/u').replace(/delete-queue$/, 'state'), defaultStateDir(1000, {}, '/home/u'), 'beside the state directory');
});

t.test('--cni-delete-queue-dir: empty is refused naming the flag; relative is made absolute at start', async (t) => {
  const queueDir = (v: string) => cniServerConfigSchema.cniDeleteQueueDir.parse(v);
  t.throws(() => queueDir(''), /expected a directory path \(e\.g\. \/var\/run\/cellium\/delete-queue, where the shim queues DELs\), got ""/);
  t.throws(() => queueDir('  '), /expected a directory path/);
  t.equal(queueDir('q'), join(process.cwd(), 'q'));
  t.equal(queueDir('/srv/q'), '/srv/q');
});

t.test('the real agent refuses an empty --cni-delete-queue-dir with the flag named', { skip: existsSync(AGENT) ? false : 'dist/ not built' }, async (t) => {
  const r = spawnSync(process.execPath, [AGENT, '--datapath-mode=memory', '--cni-delete-queue-dir='], { encoding: 'utf8', timeout: 60_000 });
  t.equal(r.status, 2, r.stderr);
  t.match(r.stderr, /invalid value for flag "cni-delete-queue-dir": expected a directory path/);
});
