// A policy-only regeneration (no rebuild, nothing but the realized revision changed) leaves the
// committed state directory as it is once its stored revision is above 1 or the node's marker says
// rules existed (restore reads either only as "rules existed", policyStoreMissing): crossing 1
// writes the marker once for the node; any other change writes the directory.
import t from 'tap';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { testHive } from '../../src/hive/index.js';
import { statedirCell } from '../../src/cells/statedir/index.js';
import { endpointCell, EndpointAPIManagerToken, type Endpoint, type EndpointChangeRequest } from '../../src/cells/endpoint/index.js';
import { RULES_MARKER } from '../../src/cells/endpoint/state-store.js';
import { mocks, request, tempStateDir } from './mocks.js';

t.test('policy-only regenerations skip the state directory once it says rules existed', async (t) => {
  const dir = tempStateDir(t, 'skip');
  const m = mocks();
  const h = await testHive(t, [statedirCell, endpointCell], { replace: m.replace, config: { 'state-dir': dir } });
  const api = h.get(EndpointAPIManagerToken);
  const ep = (await api.createEndpoint({}, request(1) as EndpointChangeRequest)) as Endpoint;
  const epDir = join(dir, String(ep.id));
  const stored = (): { ino: number; revision?: number } => ({
    ino: statSync(epDir).ino,
    revision: (JSON.parse(readFileSync(join(epDir, 'ep_config.json'), 'utf8')) as { policyRevision?: number }).policyRevision,
  });
  const first = stored();
  t.equal(first.revision, 1);
  t.notOk(existsSync(join(dir, RULES_MARKER)), 'no rules yet: no marker');

  m.policy.revision = 2;
  await ep.regenerate('policy change', 'no-rebuild');
  t.same(JSON.parse(readFileSync(join(dir, RULES_MARKER), 'utf8')), { revision: 2 }, 'revision 1 -> 2: the node says rules exist (restore must know)');
  const second = stored();
  t.same(second, first, 'and the directory is left as it is');

  m.policy.revision = 3;
  await ep.regenerate('policy change', 'no-rebuild');
  t.same(stored(), second, 'revision 2 -> 3, nothing else changed: the directory is left as it is');
  t.equal(ep.toModel().status.policy?.realized?.['policy-revision'], 3, 'the endpoint realized revision 3');

  await api.patchLabels({}, String(ep.id), ['k8s:extra=1'], []);
  const third = stored();
  t.not(third.ino, second.ino, 'a label change: written again');
  t.equal(third.revision, 3);
  t.same(JSON.parse(readFileSync(join(dir, RULES_MARKER), 'utf8')), { revision: 2 }, 'the marker is written once');
  t.match(readFileSync(join(epDir, 'ep_config.json'), 'utf8'), /k8s:extra=1/);

  m.policy.revision = 4;
  await ep.regenerate('forced', 'rewrite+load');
  t.not(stored().ino, third.ino, 'a rewrite+load always writes');
  t.equal(stored().revision, 4);
});
