// The worked example of docs/architecture.md ("Adding a cell"): the endpoint-audit cell run alone
// with a mocked EndpointManager, its bad config refused naming the flag, and beside the agent's
// real cells (memory datapath) recording a pod endpoint created and deleted through the API.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Subject } from 'rxjs';
import { HealthTreeToken, Hive, silentLogger, testHive, type HealthNode } from '../../src/hive/index.js';
import { EndpointManagerToken, type EndpointManager, type EndpointView } from '../../src/cells/endpoint/index.js';
import { agentCells } from '../../src/cells.js';
import { CelliumClient } from '../../src/api/client.js';
import { endpointAuditCell, EndpointAuditToken } from '../../docs/examples/add-a-cell/index.js';
import { isolatedDirs, podRequest } from '../api-integration/agent.js';

function child(n: HealthNode | undefined, name: string): HealthNode | undefined {
  return n?.children.find((c) => c.name === name);
}

function fakeManager() {
  const created = new Subject<EndpointView>();
  const deleted = new Subject<EndpointView>();
  const restored = new Subject<EndpointView>();
  const mgr = { created$: created, deleted$: deleted, restored$: restored } as unknown as EndpointManager;
  return { mgr, created, deleted, restored };
}

const view = (id: number, pod?: string): EndpointView => ({ id, podName: pod && `prod/${pod}`, namespace: 'prod', identity: 1000 + id, labels: [] }) as unknown as EndpointView;

t.test('alone, with a mocked EndpointManager: every event recorded, bounded, as a named job with health', async (t) => {
  const f = fakeManager();
  const h = await testHive(t, [endpointAuditCell], { replace: [[EndpointManagerToken, f.mgr]], config: { 'endpoint-audit-size': '2' } });
  const audit = h.get(EndpointAuditToken);
  f.created.next(view(1, 'web'));
  t.same(audit.events().map((e) => [e.kind, e.endpoint, e.pod, e.identity]), [['created', 1, 'prod/web', 1001]], 'recorded when next returned');
  f.restored.next(view(2));
  f.deleted.next(view(1, 'web'));
  t.same(audit.events().map((e) => `${e.kind} ${e.endpoint}`), ['restored 2', 'deleted 1'], 'the oldest dropped beyond --endpoint-audit-size');
  t.ok(h.hive.jobs().includes('endpoint-audit: endpoint-events'), 'listed as a job of its module');
  const node = child(h.get(HealthTreeToken).snapshot(), 'endpoint-audit');
  t.equal(node?.message, '2 events kept (at most 2)');
  t.equal(child(node, 'observer-endpoint-events')?.level, 'ok');
  await h.hive.stop();
  f.created.next(view(3));
  t.equal(audit.events().length, 2, 'nothing recorded after stop: the job unsubscribed');
  t.notOk(f.created.observed, 'no subscriber left on the stream');
});

t.test('a bad --endpoint-audit-size is refused naming the flag', async (t) => {
  const f = fakeManager();
  const hive = new Hive([endpointAuditCell], { logger: silentLogger() });
  t.throws(() => hive.configure({ argv: ['--endpoint-audit-size=0'] }), /endpoint-audit-size/);
  t.notOk(f.created.observed);
});

t.test('beside the agent\'s real cells: a pod endpoint created and deleted through the API', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cellium-docs-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const socketPath = join(dir, 'run', 'cellium.sock');
  const h = await testHive(t, [...agentCells, endpointAuditCell], {
    config: { ...isolatedDirs(dir), 'socket-path': socketPath, 'datapath-mode': 'memory', 'ipv4-range': '10.211.0.0/16', 'ipv6-range': 'fd00:211::/112' },
  });
  const client = new CelliumClient({ socketPath });
  t.teardown(() => client.close());
  const ep = await client.createEndpoint(0, podRequest(7, { ipv4: '10.211.1.7' }));
  await client.deleteEndpoint(ep.id!);
  const events = h.get(EndpointAuditToken).events();
  t.ok(events.every((e) => e.at instanceof Date), 'each with its time');
  t.same(events.map((e) => [e.kind, e.endpoint, e.pod]), [['created', ep.id, 'default/web-7'], ['deleted', ep.id, 'default/web-7']]);
});
