import { reservedIdentities } from '../../src/cells/identity/index.js';
import t from 'tap';
import { get } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Counter } from 'prom-client';
import { Subject } from 'rxjs';
import { module, provideInto, testHive } from '../../src/hive/index.js';
import { Transport } from '../../src/api/transport.js';
import { apiServerCell } from '../../src/cells/api-server/index.js';
import { endpointHandlersCell, policyHandlersCell } from '../../src/cells/api-handlers/index.js';
import { metricsCell, MetricsCollectorsToken, MetricsServerToken, RegenerationEventsToken, identityType, type MetricsCollector, type RegenerationEvent } from '../../src/cells/api-metrics/index.js';
import { EndpointAPIManagerToken, EndpointManagerToken } from '../../src/cells/endpoint/types.js';
import { IdentityAllocatorToken } from '../../src/cells/identity/types.js';
import { PolicyRepositoryToken } from '../../src/cells/policy/types.js';
import { MockEndpoints, MockPolicy, mockIdentities } from './mocks.js';

function fetchText(url: string): Promise<{ status: number; text: string; type: string }> {
  return new Promise((resolve, reject) => {
    get(url, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text, type: String(res.headers['content-type']) }));
    }).on('error', reject);
  });
}

t.test('identity types follow Cilium', async (t) => {
  t.equal(identityType(2, true, 1 << 24), 'reserved');
  t.equal(identityType(300, false, 1 << 24), 'cluster_local');
  t.equal(identityType((1 << 24) + 5, false, 1 << 24), 'node_local');
});

t.test('metrics are served on --prometheus-serve-addr with Cilium names and the cellium_ prefix', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cellium-metrics-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const socketPath = join(dir, 'cellium.sock');
  const eps = new MockEndpoints();
  const regen = new Subject<RegenerationEvent>();
  const regenFeed = module('regen-feed', 'Regeneration feed', provideInto(RegenerationEventsToken, () => regen.asObservable()));
  const h = await testHive(t, [apiServerCell, endpointHandlersCell, policyHandlersCell, metricsCell, regenFeed], {
    config: { 'socket-path': socketPath, 'prometheus-serve-addr': '127.0.0.1:0', 'api-rate-limit': 'endpoint-create=rate-limit:1/m,rate-burst:1,max-wait-duration:10ms,skip-initial:0,auto-adjust:false' },
    replace: [[EndpointManagerToken, eps], [EndpointAPIManagerToken, eps], [IdentityAllocatorToken, mockIdentities()], [PolicyRepositoryToken, new MockPolicy()]],
  });
  const tr = new Transport({ socketPath });
  t.teardown(() => tr.close());
  t.equal((await tr.request('PUT', '/endpoint/0', { body: { state: 'waiting-for-identity', addressing: { ipv4: '10.200.0.5' }, 'sync-build-endpoint': true } })).status, 201);
  t.equal((await tr.request('PUT', '/endpoint/0', { body: { state: 'waiting-for-identity', addressing: { ipv4: '10.200.0.6' } } })).status, 429);
  t.equal((await tr.request('PUT', '/policy', { body: '[{"endpointSelector":{}}]' })).status, 200);
  regen.next({ endpointId: 100, outcome: 'success', seconds: 0.02 });
  regen.next({ endpointId: 100, outcome: 'fail', seconds: 0.5 });

  const addr = h.get(MetricsServerToken).address();
  t.match(addr, /^127\.0\.0\.1:\d+$/);
  const res = await fetchText(`http://${addr}/metrics`);
  t.equal(res.status, 200);
  t.match(res.type, /text\/plain/);
  const m = res.text;
  t.match(m, /^cellium_endpoint 1$/m);
  t.match(m, /^cellium_endpoint_state\{endpoint_state="ready"\} 1$/m);
  t.match(m, new RegExp(`^cellium_identity\\{type="reserved"\\} ${reservedIdentities.size}$`, 'm'));
  t.match(m, /^cellium_identity\{type="cluster_local"\} 2$/m);
  t.match(m, /^cellium_policy 1$/m);
  t.match(m, /^cellium_policy_max_revision 2$/m);
  t.match(m, /^cellium_endpoint_regenerations_total\{outcome="success"\} 1$/m);
  t.match(m, /^cellium_endpoint_regenerations_total\{outcome="fail"\} 1$/m);
  t.match(m, /^cellium_endpoint_regeneration_time_stats_seconds_count\{scope="total",status="success"\} 1$/m);
  t.match(m, /^cellium_api_limiter_processed_requests_total\{api_call="endpoint-create",outcome="success",return_code="201"\} 1$/m);
  t.match(m, /^cellium_api_limiter_processed_requests_total\{api_call="endpoint-create",outcome="rate-limited",return_code="429"\} 1$/m);
  t.match(m, /^cellium_api_limiter_requests_in_flight\{api_call="endpoint-create",value="in-flight"\} 0$/m);
  t.match(m, /^cellium_api_limiter_rate_limit\{api_call="endpoint-create",value="burst"\} 1$/m);
  t.match(m, /^cellium_api_limiter_wait_duration_seconds\{api_call="endpoint-create",value="max"\} 0.01$/m);
  t.match(m, /^cellium_api_limiter_processing_duration_seconds\{api_call="endpoint-create",value="estimated"\} 2$/m);
  t.match(m, /^cellium_agent_api_process_time_seconds_count\{path="\/v1\/endpoint\/\{id\}",method="PUT",return_code="201"\} 1$/m);
  t.match(m, /^process_cpu_seconds_total /m, 'process metrics too');
  t.equal((await fetchText(`http://${addr}/other`)).status, 404);
});

t.test('no metrics listener without --prometheus-serve-addr; a bad address is a config error', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cellium-metrics-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const eps = new MockEndpoints();
  const replace = [[EndpointManagerToken, eps], [EndpointAPIManagerToken, eps], [IdentityAllocatorToken, mockIdentities()], [PolicyRepositoryToken, new MockPolicy()]] as const;
  const h = await testHive(t, [apiServerCell, metricsCell], { config: { 'socket-path': join(dir, 's.sock') }, replace });
  t.equal(h.get(MetricsServerToken).address(), undefined);
  t.match(await h.get(MetricsServerToken).scrape(), /cellium_endpoint 0/, 'still scrapeable in-process');
  await t.rejects(testHive(t, [apiServerCell, metricsCell], { config: { 'prometheus-serve-addr': 'nowhere' }, replace, start: false }), /prometheus-serve-addr/);
});

t.test("cells' metrics collectors are registered on the agent's registry at start and stopped at stop", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cellium-metrics-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const eps = new MockEndpoints();
  let stopped = 0;
  const collector: MetricsCollector = (registry) => {
    const c = new Counter({ name: 'cellium_test_collected_total', help: 'a cell of the test', registers: [registry] });
    c.inc(3);
    return { unsubscribe: () => void stopped++ };
  };
  const feed = module('collector-feed', 'A cell with metrics of its own', provideInto(MetricsCollectorsToken, () => collector));
  const h = await testHive(t, [apiServerCell, endpointHandlersCell, policyHandlersCell, metricsCell, feed], {
    config: { 'socket-path': join(dir, 'cellium.sock') },
    replace: [[EndpointManagerToken, eps], [EndpointAPIManagerToken, eps], [IdentityAllocatorToken, mockIdentities()], [PolicyRepositoryToken, new MockPolicy()]],
  });
  t.match(await h.get(MetricsServerToken).scrape(), /^cellium_test_collected_total 3$/m, 'the collector feeds the scrape');
  await h.hive.stop();
  t.equal(stopped, 1, 'unsubscribed once when the agent stops');
});
