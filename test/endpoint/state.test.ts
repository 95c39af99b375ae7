import t from 'tap';
import { Endpoint, type EndpointOwner } from '../../src/cells/endpoint/endpoint.js';
import { NEW, STORED_STATES, TRANSITIONS, canBuilderTransition, canTransition, type StoredState } from '../../src/cells/endpoint/state.js';
import type { EndpointSpec } from '../../src/cells/endpoint/spec.js';

const spec: EndpointSpec = { ifName: 'lxc1', ifIndex: 7, mac: '02:00:00:00:00:01', hostMac: '02:00:00:00:00:02', ipv4: '10.200.0.5' };

/** The table, row by row: from -> allowed "to" states through setState. */
const TABLE: ReadonlyArray<[StoredState | typeof NEW, StoredState[]]> = [
  [NEW, ['waiting-for-identity', 'restoring']],
  ['waiting-for-identity', ['ready', 'disconnecting', 'invalid']],
  ['ready', ['waiting-for-identity', 'disconnecting', 'waiting-to-regenerate', 'restoring']],
  ['waiting-to-regenerate', ['disconnecting', 'restoring']],
  ['regenerating', ['waiting-for-identity', 'disconnecting', 'waiting-to-regenerate', 'restoring']],
  ['restoring', ['disconnecting', 'restoring']],
  ['disconnecting', ['disconnected']],
  ['disconnected', []],
  ['invalid', []],
];

/** A path of allowed moves (setState or builder) from new to each state. */
const PATH: Record<StoredState, StoredState[]> = {
  'waiting-for-identity': ['waiting-for-identity'],
  ready: ['waiting-for-identity', 'ready'],
  'waiting-to-regenerate': ['waiting-for-identity', 'ready', 'waiting-to-regenerate'],
  regenerating: ['restoring', 'regenerating'],
  restoring: ['restoring'],
  disconnecting: ['waiting-for-identity', 'disconnecting'],
  disconnected: ['waiting-for-identity', 'disconnecting', 'disconnected'],
  invalid: ['waiting-for-identity', 'invalid'],
};

function endpointIn(state: StoredState | typeof NEW): Endpoint {
  const ep = new Endpoint(spec, ['k8s:app=web']);
  if (state === NEW) return ep;
  for (const s of PATH[state]) if (!ep.builderSetState(s, `to ${s}`)) throw new Error(`cannot reach ${state} via ${s}`);
  return ep;
}

t.test('the table matches the issue', async (t) => {
  for (const [from, to] of TABLE) t.same([...TRANSITIONS[from]].sort(), [...to].sort(), `row ${from}`);
});

for (const [from, allowed] of TABLE) {
  t.test(`row ${from}: every target checked through setState`, async (t) => {
    for (const to of STORED_STATES) {
      const ep = endpointIn(from);
      const ok = ep.setState(to, `test ${from} -> ${to}`);
      t.equal(ok, allowed.includes(to), `${from} -> ${to} ${allowed.includes(to) ? 'allowed' : 'refused'}`);
      t.equal(ep.storedState, ok ? to : from, 'state after the attempt');
      t.equal(canTransition(from, to), allowed.includes(to));
    }
  });
}

t.test("builder's own moves: waiting-to-regenerate|restoring -> regenerating -> ready", async (t) => {
  const moves: Array<[StoredState | typeof NEW, StoredState, boolean]> = [
    ['waiting-to-regenerate', 'regenerating', true],
    ['restoring', 'regenerating', true],
    ['regenerating', 'ready', true],
    ['ready', 'regenerating', false],
    ['waiting-for-identity', 'regenerating', false],
    [NEW, 'regenerating', false],
    ['disconnecting', 'regenerating', false],
  ];
  for (const [from, to, ok] of moves) {
    const ep = endpointIn(from);
    t.equal(ep.setState(to, 'plain setState'), false, `setState ${from} -> ${to} is not allowed`);
    t.equal(ep.builderSetState(to, 'builder'), ok, `builder ${from} -> ${to}`);
    t.equal(canBuilderTransition(from, to), ok);
  }
});

t.test('transitions are logged with their reason; not-ready when ready but unhealthy', async (t) => {
  const ep = endpointIn(NEW);
  t.equal(ep.state, 'waiting-for-identity', 'a new endpoint reports waiting-for-identity');
  ep.setState('waiting-for-identity', 'Endpoint creation');
  ep.setState('ready', 'Set identity for this endpoint');
  t.equal(ep.state, 'not-ready', 'ready without a successful build is not-ready');
  ep.setHealth('bpf', 'OK');
  ep.setHealth('policy', 'OK');
  t.equal(ep.state, 'ready');
  ep.setLinkPresent(false);
  t.equal(ep.state, 'not-ready', 'host interface gone');
  t.equal(ep.health().connected, false);
  ep.setLinkPresent(true);
  ep.setHealth('bpf', 'Failure');
  t.equal(ep.state, 'not-ready');
  t.same(ep.log().map((e) => e.message), ['Endpoint creation', 'Set identity for this endpoint']);
  t.equal(ep.log()[1]!.code, 'ok');
});

t.test('regenerate before start is refused; start refuses a second ID', async (t) => {
  const ep = endpointIn(NEW);
  await t.rejects(ep.regenerate('x'), /not started/);
  const owner: EndpointOwner = { regenerate: async () => undefined, controllers: () => [] };
  ep.start(5, owner);
  t.equal(ep.id, 5);
  t.throws(() => ep.start(6, owner), /already set to 5/);
});

t.test('regenerations coalesce while one is queued; a ready endpoint moves to waiting-to-regenerate', async (t) => {
  const ep = endpointIn('ready');
  const runs: Array<{ level: string; reasons: readonly string[] }> = [];
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  ep.start(9, {
    controllers: () => [],
    regenerate: async (e, req) => {
      runs.push({ level: req.level, reasons: req.reasons });
      e.builderSetState('regenerating', 'Regenerating endpoint');
      if (runs.length === 1) await gate;
      e.builderSetState('ready', 'Completed endpoint regeneration');
    },
  });
  const first = ep.regenerate('policy change');
  t.equal(ep.storedState, 'waiting-to-regenerate', 'ready -> waiting-to-regenerate when queued');
  await new Promise((r) => setImmediate(r));
  t.equal(ep.storedState, 'regenerating', 'the first one runs');
  const a = ep.regenerate('periodic', 'no-rebuild');
  t.equal(ep.storedState, 'waiting-to-regenerate', 'regenerating -> waiting-to-regenerate when another is queued');
  const b = ep.regenerate('config change', 'rewrite+load');
  const c = ep.regenerate('periodic');
  t.equal(a, b, 'joined the queued one');
  t.equal(b, c);
  release();
  await Promise.all([first, a]);
  t.equal(runs.length, 2, 'three requests while one ran -> one more run');
  t.same(runs[1], { level: 'rewrite+load', reasons: ['periodic', 'config change'] }, 'highest level, every reason');
  t.equal(ep.storedState, 'ready');
});

t.test('disconnect cancels queued events and refuses new ones', async (t) => {
  const ep = endpointIn('ready');
  let running!: () => void;
  const started = new Promise<void>((r) => (running = r));
  ep.start(3, {
    controllers: () => [],
    regenerate: (_e, _req, signal) => new Promise<void>((_res, rej) => {
      running();
      signal.addEventListener('abort', () => rej(signal.reason as Error), { once: true });
    }),
  });
  const first = ep.regenerate('first');
  await started;
  const queued = ep.regenerate('second');
  t.equal(await ep.disconnect('test'), true);
  await t.rejects(first, /being deleted/, 'running one aborted');
  await t.rejects(queued, /cancelled/, 'queued one cancelled');
  await t.rejects(ep.regenerate('late'), /disconnecting/);
  t.equal(await ep.disconnect('again'), false, 'second disconnect is a no-op');
  t.equal(ep.setState('disconnected', 'done'), true);
});

t.test('labels: identity labels, reserved:init when empty, modify', async (t) => {
  const ep = new Endpoint(spec, []);
  t.same(ep.identityLabels(), ['reserved:init']);
  t.equal(ep.identityStale(), true);
  t.equal(ep.modifyLabels(['k8s:app=db', 'team=x'], []), true);
  t.same(ep.labels, ['k8s:app=db', 'unspec:team=x']);
  t.throws(() => ep.modifyLabels([], ['k8s:nope']), { code: 'invalid', field: '/delete/0' });
  t.throws(() => ep.modifyLabels(['=bad'], []), { code: 'invalid', field: '/add/0' });
  t.equal(ep.modifyLabels([], ['unspec:team=x']), true);
  t.same(ep.customLabels, ['k8s:app=db']);
  ep.setIdentity({ id: 300, labels: ['k8s:app=db'], labelSet: [], reserved: false });
  t.equal(ep.identityStale(), false);
});
