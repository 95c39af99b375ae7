import t from 'tap';
import { testHive } from '../../src/hive/index.js';
import { statedirCell, StateDirConfigToken, defaultStateDir } from '../../src/cells/statedir/index.js';

t.test('--state-dir defaults by user and can be set', async (t) => {
  t.equal(defaultStateDir(0), '/var/run/cellium/state');
  t.equal(defaultStateDir(1000), './.cellium/state');
  const h = await testHive(t, [statedirCell], { config: { 'state-dir': '/tmp/x-state' } });
  t.equal(h.get(StateDirConfigToken).stateDir, '/tmp/x-state');
  await t.rejects(testHive(t, [statedirCell], { config: { 'state-dir': ' ' } }), /state-dir.*expected a directory path/s);
});
