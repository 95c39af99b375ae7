// The CNI server's defaults by user: root gets the shim's /var/run/cellium/delete-queue; any other
// user a directory of their own beside the per-user state directory, never a root-owned or
// working-directory path (an agent started by a user from any directory starts without errors).
import t from 'tap';
import { defaultDeleteQueueDir } from '../../src/cells/cni-server/index.js';
import { defaultStateDir } from '../../src/cells/statedir/index.js';

t.test('--cni-delete-queue-dir defaults by user', async (t) => {
  t.equal(defaultDeleteQueueDir(0), '/var/run/cellium/delete-queue', "root: where the shim queues DELs");
  t.equal(defaultDeleteQueueDir(1000, { XDG_STATE_HOME: '/home/u/.state' }, '/home/u'), '/home/u/.state/cellium/delete-queue', 'XDG_STATE_HOME first');
  t.equal(defaultDeleteQueueDir(1000, {}, '/home/u'), '/home/u/.local/state/cellium/delete-queue', 'else under ~/.local/state');
  t.equal(defaultDeleteQueueDir(1000, { XDG_STATE_HOME: 'rel' }, '/home/u'), '/home/u/.local/state/cellium/delete-queue', 'a relative XDG_STATE_HOME is ignored');
  t.equal(defaultDeleteQueueDir(1000, {}, '/home/u').replace(/delete-queue$/, 'state'), defaultStateDir(1000, {}, '/home/u'), 'beside the state directory');
});
