// A policy change that does not select an endpoint's identity raises the revision it realized
// (Cilium's bumpPolicyRevision). One that lands while a regeneration of that endpoint is still
// committing its state directory must not be lost: `GET /cellium/policy/realized` and
// `cellium policy import --wait` wait for it.
import t from 'tap';
import { testHive } from '../../src/hive/index.js';
import { statedirCell } from '../../src/cells/statedir/index.js';
import { endpointCell, EndpointAPIManagerToken, EndpointStateStoreToken, type Endpoint, type EndpointChangeRequest } from '../../src/cells/endpoint/index.js';
import { mocks, request, tempStateDir } from './mocks.js';

t.test('a revision bumped while the state directory commits is realized by that build', async (t) => {
  const dir = tempStateDir(t, 'bump');
  const m = mocks();
  const h = await testHive(t, [statedirCell, endpointCell], { replace: m.replace, config: { 'state-dir': dir } });
  const api = h.get(EndpointAPIManagerToken);
  const ep = (await api.createEndpoint({}, request(1) as EndpointChangeRequest)) as Endpoint;
  t.equal(ep.realizedPolicyRevision, 1);

  // hold the commit's first rename until the unrelated change has been published
  const io = h.get(EndpointStateStoreToken).io as { rename: (a: string, b: string) => Promise<void> };
  const rename = io.rename.bind(io);
  let entered!: () => void;
  const inCommit = new Promise<void>((r) => (entered = r));
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  io.rename = async (a, b) => {
    io.rename = rename;
    entered();
    await held;
    return rename(a, b);
  };

  // a rewrite+load always writes the state directory (a policy-only no-rebuild crossing revision 1
  // only marks the node, and commits nothing to hold)
  m.policy.revision = 2;
  const building = ep.regenerate('policy change (revision 2)', 'rewrite+load');
  await inCommit;
  t.equal(ep.storedState, 'regenerating', 'the build is in its commit');
  m.policy.emit(new Set([999])); // revision 3, selecting another identity: this endpoint is bumped
  t.equal(m.policy.revision, 3);
  await new Promise((r) => setImmediate(r)); // the endpoint cell's observer job takes it on the next turn
  t.equal(ep.toModel().status.policy?.spec?.['policy-revision'], 3, 'the bump moved the desired revision');
  t.equal(ep.storedState, 'regenerating', 'while the build still commits');
  release();
  await building;
  t.equal(ep.realizedPolicyRevision, 3, 'the endpoint realized revision 3, not the 2 its build started with');
  t.equal(ep.toModel().status.policy?.spec?.['policy-revision'], 3, 'desired and realized agree');
  t.equal(ep.storedState, 'ready');
});

t.test('a bump while no regeneration runs or is queued moves the realized revision at once', async (t) => {
  const m = mocks();
  const h = await testHive(t, [statedirCell, endpointCell], { replace: m.replace, config: { 'state-dir': tempStateDir(t, 'bump-idle') } });
  const ep = (await h.get(EndpointAPIManagerToken).createEndpoint({}, request(2) as EndpointChangeRequest)) as Endpoint;
  m.policy.emit(new Set([999]));
  await new Promise((r) => setImmediate(r)); // the endpoint cell's observer job takes it on the next turn
  t.equal(ep.realizedPolicyRevision, m.policy.revision, 'realized the new revision without a build');
  t.equal(ep.toModel().status.policy?.realized?.['policy-revision'], m.policy.revision, 'the model reports it');
});
