import t from 'tap';
import { join } from 'node:path';
import { testHive } from '../../src/hive/index.js';
import { statedirCell, StateDirConfigToken, defaultStateDir } from '../../src/cells/statedir/index.js';

t.test('--state-dir defaults by user and can be set', async (t) => {
  t.equal(defaultStateDir(0), '/var/run/cellium/state');
  t.equal(defaultStateDir(1000, { XDG_STATE_HOME: '/home/u/.state' }, '/home/u'), '/home/u/.state/cellium/state', 'XDG_STATE_HOME first');
  t.equal(defaultStateDir(1000, { XDG_STATE_HOME: 'relative' }, '/home/u'), '/home/u/.local/state/cellium/state', 'a relative XDG_STATE_HOME is ignored (the spec says so)');
  t.equal(defaultStateDir(1000, {}, '/home/u'), '/home/u/.local/state/cellium/state', 'never relative to the working directory');
  const h = await testHive(t, [statedirCell], { config: { 'state-dir': '/tmp/x-state' } });
  t.equal(h.get(StateDirConfigToken).stateDir, '/tmp/x-state');
  const rel = await testHive(t, [statedirCell], { config: { 'state-dir': 'st' } });
  t.equal(rel.get(StateDirConfigToken).stateDir, join(process.cwd(), 'st'), 'a relative --state-dir is made absolute at start');
  await t.rejects(testHive(t, [statedirCell], { config: { 'state-dir': ' ' } }), /state-dir.*expected a directory path/s);
});
