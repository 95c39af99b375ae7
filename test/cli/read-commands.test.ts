// The CLI's read commands against a fake agent: human tables by default, the models with -o json.
import t from 'tap';
import * as fx from '../api-spec/fixtures.js';
import { cli, startFakeAgent } from './fake-agent.js';

/** The fixtures, with the endpoint list out of order (the table sorts it). */
const HANDLERS = { ...fx.cannedReplies(), GetEndpoint: { status: 200, body: [fx.endpoint13, fx.endpoint12] } };

t.test('read commands', async (t) => {
  const agent = await startFakeAgent(t, HANDLERS);
  const run = (...args: string[]) => cli(agent.socketPath, args);

  t.test('status', async (t) => {
    const r = await run('status');
    t.equal(r.code, 0);
    t.equal(r.stderr, '');
    t.match(r.stdout, /^Cellium:\s+Ok\s+all 14 modules healthy$/m);
    t.match(r.stdout, /^Datapath mode:\s+bpf, veth devices \(attach tcx\)$/m);
    t.match(r.stdout, /^IPAM:\s+2 allocated from 10\.200\.0\.0\/16\s+ok$/m);
    t.match(r.stdout, /^Identity range:\s+256 - 65535$/m);
    t.match(r.stdout, /^Controllers:\s+1\/2 healthy$/m);
    t.match(r.stdout, /^Health:\s+agent: DEGRADED - 1 of 3 modules degraded$/m);
    t.match(r.stdout, /^\s+ipam: DEGRADED - gc failing \(pool busy\)$/m);
    t.notMatch(r.stdout, /endpoint: ok/, 'healthy nodes only with --verbose');
    t.match(r.stdout, /^ipam-gc\s+0\s+3\s+pool busy$/m, 'failing controllers are listed');
    const v = await run('status', '--verbose');
    t.match(v.stdout, /^\s+endpoint: ok - running$/m);
    t.match(v.stdout, /^sync-policy\s+9\s+1\s+transient$/m);
    t.match(v.stdout, /^cellium_ipcache\s+512000$/m);
    const j = await run('status', '-o', 'json');
    t.same(JSON.parse(j.stdout), fx.statusResponse);
    await run('status', '--brief');
    t.same(agent.requests('GetHealthz').map((r) => r.headers.brief), [undefined, undefined, undefined, true]);
  });

  t.test('endpoint list: Cilium columns, sorted, one label per line', async (t) => {
    const r = await run('endpoint', 'list');
    t.equal(r.code, 0);
    const lines = r.stdout.split('\n');
    t.match(lines[0], /^ENDPOINT\s+POLICY \(INGRESS\) ENFORCEMENT\s+POLICY \(EGRESS\) ENFORCEMENT\s+IDENTITY\s+LABELS \(SOURCE:KEY\[=VALUE\]\)\s+IPV6\s+IPV4\s+STATUS$/);
    t.match(lines[1], /^12\s+Enabled\s+Disabled\s+31245\s+k8s:app=web\s+fd00:200::c\s+10\.200\.0\.12\s+ready$/);
    t.match(lines[2], /^\s+k8s:io\.kubernetes\.pod\.namespace=default$/);
    t.match(lines[3], /^13\s+Unknown\s+Unknown\s+k8s:app=db\s+10\.200\.0\.13\s+waiting-for-identity$/);
    const j = await run('ep', 'list', '-o', 'json');
    t.same(JSON.parse(j.stdout), [fx.endpoint13, fx.endpoint12], 'json is the models as served');
    await run('endpoint', 'list', 'k8s:app=web');
    t.same(agent.requests('GetEndpoint').map((q) => q.body), [undefined, undefined, ['k8s:app=web']], 'label filter sent as the body');
  });

  t.test('endpoint get with a prefixed id', async (t) => {
    const r = await run('endpoint', 'get', 'pod-name:default/web-0');
    t.equal(r.code, 0);
    t.same(agent.requests('GetEndpointID').at(-1)?.path, { id: 'pod-name:default/web-0' });
    t.match(r.stdout, /^Endpoint:\s+12$/m);
    t.match(r.stdout, /^State:\s+ready$/m);
    t.match(r.stdout, /^Interface:\s+lxc12ab \(index 42\)$/m);
    t.match(r.stdout, /^Pod:\s+default\/web-0$/m);
    t.match(r.stdout, /^Allowed ingress:\s+1, 31246$/m);
    t.match(r.stdout, /^Health:\s+OK \(bpf OK, policy OK\)$/m);
    t.same(JSON.parse((await run('endpoint', 'get', '12', '-o', 'json')).stdout), fx.endpoint12);
  });

  t.test('endpoint log, health, labels, config', async (t) => {
    const log = await run('endpoint', 'log', '12');
    t.match(log.stdout, /^TIMESTAMP\s+STATE\s+CODE\s+MESSAGE$/m);
    t.match(log.stdout, /^2026-11-22T08:00:00\.000Z\s+ready\s+ok\s+Completed endpoint regeneration$/m);
    const health = await run('endpoint', 'health', '12');
    t.match(health.stdout, /^Overall health:\s+OK$/m);
    t.match(health.stdout, /^Connected:\s+yes$/m);
    const labels = await run('endpoint', 'labels', '12');
    t.match(labels.stdout, /^user\s+app:tier=front$/m);
    t.match(labels.stdout, /^derived\s+k8s:pod-template-hash=abc$/m);
    t.equal(agent.requests('PatchEndpointIDLabels').length, 0, 'no change without --add/--delete');
    const cfg = await run('endpoint', 'config', '12');
    t.match(cfg.stdout, /^Conntrack\s+Enabled\s+immutable$/m);
    t.match(cfg.stdout, /^Debug\s+Disabled\s+mutable$/m);
  });

  t.test('identity list, --endpoints, get', async (t) => {
    const r = await run('identity', 'list');
    t.match(r.stdout, /^ID\s+LABELS$/m);
    t.match(r.stdout, /^1\s+reserved:host$/m);
    t.match(r.stdout, /^31245\s+k8s:app=web\n\s+k8s:io\.kubernetes\.pod\.namespace=default$/m);
    const e = await run('identity', 'list', '--endpoints');
    t.match(e.stdout, /^31245\s+2\s+k8s:app=web$/m);
    const g = await run('identity', 'get', '31245');
    t.match(g.stdout, /^ID:\s+31245$/m);
    t.same(agent.requests('GetIdentityID')[0]?.path, { id: '31245' });
  });

  t.test('map list and get', async (t) => {
    const l = await run('map', 'list');
    t.match(l.stdout, /^cellium_lxc\s+1\s+\/sys\/fs\/bpf\/tc\/globals\/cellium_lxc$/m);
    t.match(l.stdout, /^cellium_policy_00012\s+0\s+/m);
    const g = await run('map', 'get', 'cellium_lxc');
    t.match(g.stdout, /^KEY\s+VALUE\s+STATE\s+ERROR$/m);
    t.match(g.stdout, /^10\.200\.0\.12:0\s+id=12 ifindex=42\s+ok$/m);
    t.same(agent.requests('GetMapName')[0]?.path, { name: 'cellium_lxc' });
  });

  t.test('config, policy get, selectors, ipam', async (t) => {
    const c = await run('config');
    t.match(c.stdout, /^PolicyAuditMode\s+Disabled$/m);
    t.match(c.stdout, /^PolicyEnforcement\s+default$/m);
    const all = await run('config', '--all');
    t.match(all.stdout, /^ipv4-range\s+10\.200\.0\.0\/16$/m);
    t.match(all.stdout, /^enable-ipv6\s+false$/m);
    const p = await run('policy', 'get');
    t.match(p.stdout, /"endpointSelector": \{/);
    t.match(p.stdout, /^Revision: 4$/m);
    const s = await run('policy', 'selectors');
    t.match(s.stdout, /^&LabelSelector\{MatchLabels:map\[any\.app:web\]\}\s+1\s+31245$/m);
    const i = await run('ipam');
    t.equal(i.stdout, [
      'Status:        3/131066 allocated, 1 out of pool',
      'Out of pool:   1 (endpoint addresses outside every pool: recorded, never handed out)',
      '',
      'POOL      FAMILY   CIDR                GATEWAY          SIZE    USED   FREE',
      'default   ipv4     10.200.0.0/16       10.200.0.1       65533   2      65531',
      'default   ipv6     fd00:10:200::/112   fd00:10:200::1   65534   1      65533',
      '',
      'IP               OWNER            ENDPOINT   EXPIRES                    POOL',
      '10.200.0.12      default/web-0    12         no                         default',
      '10.200.0.14      cellium-cli      -          2026-11-22T08:10:00.000Z   default',
      '192.0.2.10       default/legacy   13         no                         OUT OF POOL',
      'fd00:10:200::c   default/web-0    12         no                         default',
      '',
    ].join('\n'), 'pools (CIDR, size, used, free), then each address: owner, endpoint, expiry, out-of-pool');
    t.same(JSON.parse((await run('ipam', '-o', 'json')).stdout), fx.ipamView);
    t.same(agent.requests('GetIpam').map((r) => r.query), [{}, {}]);
    await run('ipam', 'list', '--family', 'ipv6');
    t.same(agent.requests('GetIpam')[2]?.query, { family: 'ipv6' }, '--family is sent as the query');
    const bad = await run('ipam', 'list', '--family', 'ipv5');
    t.same([bad.code, bad.stderr.trim()], [2, 'cellium: invalid --family "ipv5": expected ipv4 or ipv6'], 'a bad family is a usage error, nothing sent');
    t.equal(agent.requests('GetIpam').length, 3);
  });

  t.test('ipam with no pool and nothing in use', async (t) => {
    const empty = await startFakeAgent(t, { GetIpam: { status: 200, body: { allocations: {}, ipv4: [], ipv6: [], status: '0/0 allocated', pools: [], addresses: [] } } });
    const r = await cli(empty.socketPath, ['ipam']);
    t.equal(r.stdout, 'Status:   0/0 allocated\n\nNo pool configured (--ipv4-range, --ipv6-range).\n\nNo address in use.\n');
  });

  t.test('the CLI sent only spec-valid requests; every canned answer matched the spec', async (t) => {
    t.same(agent.received.filter((r) => r.rejected), []);
    t.same(agent.problems, []);
  });
});
