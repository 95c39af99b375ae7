import t from 'tap';
import { HealthRegistry, Controllers, type Jobs } from '../../src/hive/index.js';
import { StatusCollector, agentState, degradedPaths } from '../../src/cells/agent-status/index.js';
import { NodeIPAM } from '../../src/cells/ipam/index.js';
import { mockDatapath, mockIdentities } from './mocks.js';

/** Jobs that only record timers (the probe is driven by hand here). */
function fakeJobs(): Jobs & { timers: (() => Promise<void>)[] } {
  const timers: (() => Promise<void>)[] = [];
  return {
    timers,
    oneShot: () => undefined,
    timer: (_name: string, fn: () => Promise<void>) => {
      timers.push(fn);
      return { trigger: () => undefined };
    },
    observer: () => undefined,
  } as unknown as Jobs & { timers: (() => Promise<void>)[] };
}

t.test('the agent state follows the health tree and names the degraded modules', async (t) => {
  const health = new HealthRegistry();
  health.scopeAt(['endpoint']).ok('fine');
  t.same(agentState(health.snapshot(), '1.2.3', 'memory'), { state: 'Ok', msg: 'cellium 1.2.3 (datapath memory)' });
  health.scopeAt(['ipam']).scope('timer-ipam-expiration').degraded('pool gone', new Error('x'));
  t.same(degradedPaths(health.snapshot()), ['agent/ipam/timer-ipam-expiration (pool gone)']);
  t.match(agentState(health.snapshot(), '1.2.3', 'memory'), { state: 'Warning', msg: /degraded: agent\/ipam\/timer-ipam-expiration \(pool gone\)/ });
});

t.test('the status is rebuilt when something in it changes, and only then', async (t) => {
  const health = new HealthRegistry();
  const ipam = new NodeIPAM({ ipv4Range: '10.230.0.0/24', ipv6Range: '' });
  const dp = mockDatapath('bpf');
  let lists = 0;
  const summary = dp.maps.summary.bind(dp.maps);
  (dp.maps as { summary: typeof summary }).summary = async () => {
    lists++;
    return summary();
  };
  const jobs = fakeJobs();
  const c = new StatusCollector(health, new Controllers(), ipam, mockIdentities(), dp, jobs);
  const first = await c.statusJson();
  t.equal(await c.statusJson(), first, 'unchanged: the same text');
  t.equal(lists, 1, 'the maps were probed once, on demand');
  ipam.allocateIP('10.230.0.9', 'default/a');
  const second = await c.statusJson();
  t.not(second, first);
  t.match(JSON.parse(second).ipam, { allocations: { '10.230.0.9': 'default/a' }, status: '1/253 allocated' });
  health.scopeAt(['endpoint']).degraded('broken');
  t.equal(JSON.parse(await c.statusJson()).cilium.state, 'Warning', 'health changes show at once');
  await jobs.timers[0]!();
  t.equal(lists, 2, 'the background probe lists the maps again');
  t.same(JSON.parse(await c.statusJson(true)), { cilium: JSON.parse(await c.statusJson()).cilium });
});

t.test('a failing maps probe leaves the maps out instead of failing the status', async (t) => {
  const dp = mockDatapath('bpf');
  (dp.maps as unknown as { summary: () => Promise<never> }).summary = async () => {
    throw new Error('bpffs not mounted');
  };
  const c = new StatusCollector(new HealthRegistry(), new Controllers(), new NodeIPAM({ ipv4Range: '10.230.1.0/24', ipv6Range: '' }), mockIdentities(), dp, fakeJobs());
  const s = await c.status();
  t.same(s['bpf-maps'], { maps: [] });
  t.equal(s.cilium?.state, 'Ok');
});

t.test('on the memory datapath: no device mode and no BPF maps, and the datapath named', async (t) => {
  const c = new StatusCollector(new HealthRegistry(), new Controllers(), new NodeIPAM({ ipv4Range: '10.230.2.0/24', ipv6Range: '' }), mockIdentities(), mockDatapath('memory'), fakeJobs());
  const s = await c.status();
  t.equal(s['cellium-datapath'], 'memory');
  t.notOk('datapath-mode' in s, 'veth devices belong to the BPF datapath');
  t.notOk('bpf-maps' in s, 'the memory datapath has no BPF maps');
  const b = await new StatusCollector(new HealthRegistry(), new Controllers(), new NodeIPAM({ ipv4Range: '10.230.3.0/24', ipv6Range: '' }), mockIdentities(), mockDatapath('bpf'), fakeJobs()).status();
  t.equal(b['cellium-datapath'], 'bpf');
  t.equal(b['datapath-mode'], 'veth');
  t.equal(b['bpf-maps']?.maps?.length, 2);
});
