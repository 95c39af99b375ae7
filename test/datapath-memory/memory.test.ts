import t from 'tap';
import { Hive, provideInto, silentLogger, testHive } from '../../src/hive/index.js';
import {
  datapathCell, DatapathToken, DatapathProvidersToken, LinkCheckerToken, SelectedDatapathToken, sysfsLinkChecker,
  type Datapath, type DatapathProvider, type EndpointDatapathConfig,
} from '../../src/cells/datapath/index.js';
import { MemoryDatapath, MemoryLoader, MemoryMaps, memoryDatapathCell } from '../../src/cells/datapath-memory/index.js';
import { modelVerdict } from '../../src/datapath/model/verdict.js';
import { verdictCases } from '../fixtures/verdict-cases.js';

t.test('every shared verdict case: the memory datapath agrees with the table and the model', async (t) => {
  const tally: Record<string, number> = {};
  for (const c of verdictCases) {
    const dp = new MemoryDatapath();
    for (const e of c.ipcache) dp.maps.upsertIPCache(e);
    dp.maps.setPolicy(7, c.policy);
    t.same(await dp.maps.flush(), []);
    const v = await dp.verdict(7, c.direction, c.packet);
    t.same(v, c.expect, c.name);
    t.same(v, modelVerdict(c.ipcache, c.policy, c.direction, c.packet), `${c.name} (model)`);
    if (!c.expect.allowed) {
      tally[c.expect.reason!] = (tally[c.expect.reason!] ?? 0) + 1;
      t.same(await dp.dropCounters(), { [c.expect.reason!]: 1 }, 'drop counted by reason');
    } else t.same(await dp.dropCounters(), {}, 'nothing dropped');
  }
  t.ok(tally.policy! > 0 && tally['policy-deny']! > 0, 'both drop reasons covered');
});

t.test('drop counters accumulate; verdict of an endpoint without a policy map is an error', async (t) => {
  const dp = new MemoryDatapath();
  dp.maps.upsertIPCache({ cidr: '10.1.0.0/16', identity: 300 });
  dp.maps.setPolicy(1, [{ identity: 300, direction: 'ingress', protocol: 6, port: 80, deny: false }, { identity: 300, direction: 'ingress', protocol: 17, port: 0, deny: true }]);
  const pkt = (dport: number, protocol = 6) => ({ src: '10.1.2.3', dst: '10.200.0.5', protocol, dport });
  t.equal((await dp.verdict(1, 'ingress', pkt(80))).allowed, true);
  await dp.verdict(1, 'ingress', pkt(81));
  await dp.verdict(1, 'ingress', pkt(82));
  await dp.verdict(1, 'ingress', pkt(53, 17));
  t.same(await dp.dropCounters(), { policy: 2, 'policy-deny': 1 });
  await t.rejects(dp.verdict(2, 'egress', pkt(80)), /endpoint 2 has no policy map/);
});

t.test('a loaded endpoint: what the pod sends from an address not its own drops as invalid-source, before policy', async (t) => {
  const dp = new MemoryDatapath();
  await dp.loader.reloadEndpoint({ id: 4, identity: 300, ipv4: '10.200.0.4', ifName: 'lxc4', ifIndex: 4, mac: '02:00:00:00:00:04', hostMac: '02:00:00:00:00:05' });
  dp.maps.setPolicy(4, [{ identity: 0, direction: 'egress', protocol: 0, port: 0, deny: false }]);
  const from = (src: string, extra: Record<string, unknown> = {}) => ({ src, dst: src.includes(':') ? 'fd00::9' : '10.200.0.9', protocol: 17, dport: 53, ...extra });
  t.same(await dp.verdict(4, 'egress', from('10.200.0.4')), { allowed: true, peerIdentity: 2 }, 'its own address: the policy decides (allow all egress)');
  t.same(await dp.verdict(4, 'egress', from('10.200.0.7')), { allowed: false, reason: 'invalid-source', peerIdentity: 2 }, 'another pod\'s address drops although the policy allows everything');
  t.same(await dp.verdict(4, 'egress', from('fd00::4')), { allowed: false, reason: 'invalid-source', peerIdentity: 2 }, 'a family it has no address of drops');
  t.same(await dp.verdict(4, 'egress', from('fe80::1', { protocol: 58, icmpType: 135 })), { allowed: true, peerIdentity: 2 }, 'neighbour discovery from a link-local address passes');
  t.same(await dp.verdict(4, 'ingress', from('10.200.0.7')), { allowed: false, reason: 'policy', peerIdentity: 2 }, 'ingress is judged by the policy as before');
  t.same(await dp.dropCounters(), { 'invalid-source': 2, policy: 1 });
});

t.test("a pod's link-local MLD passes without policy; other link-local or forged ICMPv6 stays invalid-source (bpf_lxc's is_link_local_mld)", async (t) => {
  const dp = new MemoryDatapath();
  await dp.loader.reloadEndpoint({ id: 6, identity: 300, ipv4: '10.200.0.6', ifName: 'lxc6', ifIndex: 6, mac: '02:00:00:00:00:06', hostMac: '02:00:00:00:00:07' });
  dp.maps.setPolicy(6, []);
  const icmp6 = (src: string, dst: string, icmpType: number) => ({ src, dst, protocol: 58, dport: 0, icmpType });
  const pass = { allowed: true, peerIdentity: 2 };
  const forged = { allowed: false, reason: 'invalid-source', peerIdentity: 2 };
  t.same(await dp.verdict(6, 'egress', icmp6('fe80::1c05:a0ff:fee1:f9a6', 'ff02::16', 143)), pass, 'an MLDv2 report from the link-local address (no IPv6 address of its own, no policy)');
  t.same(await dp.verdict(6, 'egress', icmp6('::', 'ff02::16', 143)), pass, 'and from the unspecified address (during DAD)');
  t.same(await dp.verdict(6, 'egress', icmp6('fe80::1', 'ff02::2', 131)), pass, 'an MLDv1 report');
  t.same(await dp.verdict(6, 'egress', icmp6('fe80::1', 'ff02::1', 128)), forged, 'an echo from the link-local address is not MLD');
  t.same(await dp.verdict(6, 'egress', icmp6('fd00::7', 'ff02::16', 143)), forged, 'MLD from a global address is a forged source');
  t.same(await dp.verdict(6, 'egress', icmp6('fe80::1', 'ff05::16', 143)), forged, 'MLD to a group beyond the link is not link-local');
  t.same(await dp.verdict(6, 'ingress', icmp6('fe80::9', 'ff02::1', 130)), { allowed: false, reason: 'policy', peerIdentity: 2 }, 'an MLD query towards the pod is judged by its policy as before');
  t.same(await dp.dropCounters(), { 'invalid-source': 3, policy: 1 });
});

t.test('maps: lxc per endpoint, ipcache longest prefix, dumps, failed policy writes', async (t) => {
  const m = new MemoryMaps();
  m.setEndpoint(5, [{ ip: '10.200.0.5', endpointId: 5, ifIndex: 9, identity: 300, mac: '02:00:00:00:00:01' }, { ip: 'FD00::5', endpointId: 5, ifIndex: 9, identity: 300, mac: '02:00:00:00:00:01' }]);
  t.equal(m.lookupEndpoint('fd00:0::5')?.endpointId, 5, 'IPv6 keys are canonical');
  m.setEndpoint(5, [{ ip: '10.200.0.6', endpointId: 5, ifIndex: 9, identity: 300, mac: '' }]);
  t.equal(m.lookupEndpoint('10.200.0.5'), undefined, 'setEndpoint replaces the endpoint\'s entries');
  t.throws(() => m.setEndpoint(6, [{ ip: 'nope', endpointId: 6, ifIndex: 1, identity: 1, mac: '' }]), /not an IP address/);
  m.upsertIPCache({ cidr: '10.0.0.0/8', identity: 16777217 });
  m.upsertIPCache({ cidr: '10.200.0.6/32', identity: 300 });
  m.upsertIPCache({ cidr: '0.0.0.0/0', identity: 2 });
  t.equal(m.lookupIPCache('10.200.0.6')?.identity, 300);
  t.equal(m.lookupIPCache('10.9.9.9')?.identity, 16777217);
  t.equal(m.lookupIPCache('192.168.1.1')?.identity, 2);
  t.equal(m.lookupIPCache('fd00::1'), undefined, 'families are separate');
  m.deleteIPCache('10.200.0.6/32');
  t.equal(m.lookupIPCache('10.200.0.6')?.identity, 16777217);
  m.setPolicy(5, [{ identity: 300, direction: 'egress', protocol: 6, port: 80, endPort: 83, deny: false }]);
  t.same((await m.get('cellium_policy_00005'))?.entries, [{ key: 'e|300|6|80/62', value: 'allow' }], 'a port range becomes LPM blocks');
  m.setPolicy(5, [{ identity: 300, direction: 'egress', protocol: 0, port: 80, deny: false }]);
  t.match(await m.flush(), [/cellium_policy_00005: .*a port needs a protocol/], 'a policy the map cannot hold is reported by flush');
  t.equal((await m.flush()).length, 1, 'and again while it stands (a flush does not forget it)');
  t.match(await m.flush(undefined, 5), [/cellium_policy_00005: .*a port needs a protocol/], 'to its endpoint, for as long as the map does not hold its policy');
  t.same(await m.flush(undefined, 6), [], 'not to another endpoint');
  t.equal((await m.get('cellium_policy_00005'))?.status.state, 'error');
  t.equal(m.policyOf(5)?.[0]?.endPort, 83, 'the old policy stays');
  t.same((await m.list()).map((d) => d.name), ['cellium_lxc', 'cellium_ipcache', 'cellium_policy_00005']);
  t.same(await m.summary(), [{ name: 'cellium_lxc', size: 1 }, { name: 'cellium_ipcache', size: 2 }, { name: 'cellium_policy_00005', size: 1 }], 'the summary counts the entries');
  t.same((await m.get('cellium_lxc'))?.entries, [{ key: '10.200.0.6', value: 'id=5 ifindex=9 identity=300 mac=' }]);
  t.same((await m.get('cellium_ipcache'))?.entries.map((e) => e.key).sort(), ['0.0.0.0/0', '10.0.0.0/8']);
  t.equal(await m.get('cellium_nope'), undefined);
  m.deletePolicy(5);
  m.deleteEndpoint(5);
  t.equal(await m.get('cellium_policy_00005'), undefined);
  t.equal(m.lookupEndpoint('10.200.0.6'), undefined);
  t.ok(m.writes > 0);
});

t.test('loader records configurations; isLoaded compares every field and option', async (t) => {
  const l = new MemoryLoader();
  const cfg: EndpointDatapathConfig = { id: 3, identity: 300, ipv4: '10.200.0.3', ifName: 'lxc3', ifIndex: 30, mac: 'a', hostMac: 'b', options: { Debug: 'Disabled' } };
  t.equal(await l.isLoaded(cfg), false);
  await l.reloadEndpoint(cfg);
  t.equal(await l.isLoaded(cfg), true);
  t.equal(await l.isLoaded({ ...cfg, identity: 301 }), false);
  t.equal(await l.isLoaded({ ...cfg, options: { Debug: 'Enabled' } }), false);
  await l.reloadEndpoint({ ...cfg, identity: 301 });
  t.equal(l.get(3)?.generation, 2);
  t.same(l.history, [3, 3]);
  const ac = new AbortController();
  ac.abort(new Error('stop'));
  await t.rejects(l.reloadEndpoint(cfg, ac.signal), /stop/);
  await l.unloadEndpoint(3);
  await l.unloadEndpoint(3);
  t.same(l.list(), []);
});

t.test('datapath cell: auto and memory select the memory datapath; its LinkChecker simulates links', async (t) => {
  for (const mode of [undefined, 'auto', 'memory']) {
    const h = await testHive(t, [datapathCell, memoryDatapathCell], { config: mode ? { 'datapath-mode': mode } : {} });
    const dp = h.get(DatapathToken);
    t.equal(dp.mode, 'memory', `mode ${mode ?? 'default'}`);
    t.ok(dp instanceof MemoryDatapath);
    const links = h.get(LinkCheckerToken);
    t.equal(await links('lxc1'), true);
    (dp as MemoryDatapath).removeLink('lxc1');
    t.equal(await links('lxc1'), false);
    (dp as MemoryDatapath).addLink('lxc1');
    t.equal(await links('lxc1'), true);
  }
  const bad = new Hive([datapathCell, memoryDatapathCell], { logger: silentLogger() });
  t.throws(() => bad.configure({ values: { 'datapath-mode': 'ebpf' } }), /expected one of auto, bpf, memory/);
});

t.test('datapath cell: a BPF provider plugs in through the providers group', async (t) => {
  const fake: Datapath = { ...new MemoryDatapath(), mode: 'bpf', verdict: async () => ({ allowed: true, peerIdentity: 1 }), dropCounters: async () => ({}) } as unknown as Datapath;
  const provider = (why: string | undefined, prefer = true) => (): DatapathProvider => ({
    mode: 'bpf', preferInAuto: prefer, unavailable: () => why, create: () => fake, linkExists: async () => true,
  });
  const noBpf = new Hive([datapathCell, memoryDatapathCell], { logger: silentLogger() });
  noBpf.configure({ values: { 'datapath-mode': 'bpf' } });
  t.throws(() => noBpf.get(DatapathToken), /--datapath-mode=bpf: no bpf datapath is built into this agent \(registered: memory\)/);

  const auto = await testHive(t, [datapathCell, memoryDatapathCell, provideInto(DatapathProvidersToken, provider(undefined))]);
  t.equal(auto.get(DatapathToken).mode, 'bpf', 'auto prefers an available BPF datapath that asks for it');
  t.equal(auto.get(SelectedDatapathToken).requested, 'auto');

  const down = await testHive(t, [datapathCell, memoryDatapathCell, provideInto(DatapathProvidersToken, provider('needs root'))]);
  t.equal(down.get(DatapathToken).mode, 'memory', 'auto falls back to memory when BPF cannot run');

  const forced = new Hive([datapathCell, memoryDatapathCell, provideInto(DatapathProvidersToken, provider('needs root'))], { logger: silentLogger() });
  forced.configure({ values: { 'datapath-mode': 'bpf' } });
  t.throws(() => forced.get(DatapathToken), /the bpf datapath cannot run here: needs root/);

  const modest = await testHive(t, [datapathCell, memoryDatapathCell, provideInto(DatapathProvidersToken, provider(undefined, false))]);
  t.equal(modest.get(DatapathToken).mode, 'memory', 'auto keeps memory unless the BPF provider asks to be preferred');
});

t.test('sysfs link checker', async (t) => {
  t.equal(await sysfsLinkChecker('lo'), true);
  t.equal(await sysfsLinkChecker(`nolink${process.pid}`), false);
  t.equal(await sysfsLinkChecker('../../etc'), false);
  t.equal(await sysfsLinkChecker('..'), false);
});
