// The stateful verdict cases (test/fixtures/stateful-cases.ts) against the real bpf_lxc (root): the
// program is loaded (not attached) with the endpoint's constants, bound to small conntrack maps,
// the ipcache and the endpoint's policy map, and each step's packet is crafted and run through
// from_container (egress) or to_container (ingress) with BPF_PROG_TEST_RUN. Time passes for real
// (expiry cases load the program with short lifetimes). After every step the kernel's conntrack
// entries equal the model's (memory datapath fed the same packets): keys, flags, source identity,
// counters, remaining lifetime. Also: a failed insert drops with its own reason, lifetimes are
// CLOCK_MONOTONIC seconds, and kernelVerdict reads conntrack. The stateful cases run against both
// ways of loading bpf_lxc: the endpoint's own copy and the node's shared program (whose test runs
// see the loopback's ifindex, 1: the endpoint's cellium_endpoints entry is keyed by it).
import t, { type Test } from 'tap';
import { DropEventReader } from '../../src/monitor/index.js';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { BpfMap, MapType, type BpfObject } from '../../src/bpf/index.js';
import { CtMaps, PolicyMapsMap, openEndpointsMap, flushCtMaps, monotonicSeconds, openIPCacheMap, openPolicyMap, readDropCounters, syncPolicyMap, type IPCacheMap, type PolicyMap } from '../../src/maps/index.js';
import { kernelVerdict, loadLxcObject, loadSharedForEndpoint, writeSharedEndpoint } from '../../src/cells/datapath-bpf/lxc/index.js';
import { MemoryDatapath } from '../../src/cells/datapath-memory/index.js';
import { ctKeyId } from '../../src/datapath/model/conntrack.js';
import type { CtEntry, CtKey, CtTimeouts } from '../../src/datapath/conntrack.js';
import type { EndpointDatapathConfig } from '../../src/datapath/types.js';
import type { VerdictPacket } from '../../src/datapath/model/verdict.js';
import { statefulCases, type StatefulCase } from '../fixtures/verdict-cases.js';
import { frame } from '../bpf/fixtures/packets.js';
import { skipUnlessBpf, testBpfRoot } from '../bpf/fixtures/topology.js';

const skip = skipUnlessBpf();
const CFG: EndpointDatapathConfig = { id: 7, identity: 4242, ipv4: '10.0.0.2', ipv6: 'fd00::2', ifName: 'lxc7', ifIndex: 7, mac: '', hostMac: '' };
/** The shared program's test runs cross the loopback (skb->ifindex 1). */
const SHARED_CFG: EndpointDatapathConfig = { ...CFG, ifIndex: 1 };
const TC_ACT_OK = 0;

/** A loaded bpf_lxc to run packets through. */
type Runnable = Pick<BpfObject, 'close'> & { testRun(name: 'from_container' | 'to_container', data: Buffer): { retval: number } };
const TC_ACT_SHOT = 2;

interface Fixture {
  readonly root: string;
  readonly ct: CtMaps;
  readonly ipcache: IPCacheMap;
  readonly policy: PolicyMap;
  /** bpf_lxc loaded for these lifetimes and options (cached). */
  program(timeouts?: CtTimeouts, options?: Readonly<Record<string, string>>): Promise<Runnable>;
}

function fixture(t: Test, shared = false): Fixture {
  const { root, remove } = testBpfRoot();
  t.teardown(remove);
  const ct = CtMaps.open(root, { tcp: 4096, any: 4096 });
  const ipcache = openIPCacheMap(root);
  const policy = openPolicyMap(root, CFG.id);
  const loaded = new Map<string, Runnable>();
  t.teardown(() => {
    for (const o of loaded.values()) o.close();
    ct.close();
    ipcache.close();
    policy.close();
  });
  return {
    root, ct, ipcache, policy,
    async program(timeouts, options) {
      const id = JSON.stringify([timeouts, options]);
      let o = loaded.get(id);
      if (!o) {
        const lo = { bpfRoot: root, ctTimeouts: timeouts, reuseMaps: { ...ct.fds(), cellium_ipcache: ipcache.map.fd, cellium_policy: policy.map.fd } };
        o = shared
          ? (await loadSharedForEndpoint({ ...SHARED_CFG, ...(options ? { options } : {}) }, lo, false)).program
          : await loadLxcObject({ ...CFG, ...(options ? { options } : {}) }, lo);
        loaded.set(id, o);
      }
      // the shared program reads the endpoint's options from its entry: rewrite it for this case
      if (shared) {
        const endpoints = openEndpointsMap(root);
        const policyMaps = PolicyMapsMap.open(root);
        writeSharedEndpoint({ endpoints, policyMaps }, { ...SHARED_CFG, ...(options ? { options } : {}) }, policy.map.fd);
        endpoints.close();
        policyMaps.close();
      }
      return o;
    },
  };
}

/** Sends a crafted packet through the program of its direction: true when it passed. */
function run(obj: Runnable, direction: 'ingress' | 'egress', p: VerdictPacket): boolean {
  const { retval } = obj.testRun(direction === 'egress' ? 'from_container' : 'to_container', frame(p));
  if (retval !== TC_ACT_OK && retval !== TC_ACT_SHOT) throw new Error(`unexpected tc verdict ${retval}`);
  return retval === TC_ACT_OK;
}

/** What both sides must agree on for one entry (remaining lifetime apart). */
function entryText(k: CtKey, e: CtEntry): string {
  return `${ctKeyId(k)} flags=${e.flags} src=${e.srcSecId} rx=${e.rxPackets}/${e.rxBytes}/${e.rxFlagsSeen} tx=${e.txPackets}/${e.txBytes}/${e.txFlagsSeen}`;
}

for (const program of ['per-endpoint', 'shared'] as const) t.test(`every stateful case (${program}): the kernel passes and drops like the model, and holds the same entries`, { skip }, async (t) => {
  const fx = fixture(t, program === 'shared');
  for (const c of statefulCases) await t.test(c.name, async (t) => runCase(t, fx, c));
});

async function runCase(t: Test, fx: Fixture, c: StatefulCase): Promise<void> {
  const obj = await fx.program(c.timeouts, c.options);
  await flushCtMaps(fx.ct);
  for (const [cidr] of fx.ipcache.entries()) fx.ipcache.delete(cidr);
  fx.ipcache.setMany(c.ipcache.map((e) => [e.cidr, { identity: e.identity, flags: 0 }]));
  syncPolicyMap(fx.policy, c.policy);
  const clock = { now: monotonicSeconds() + 0.5 };
  const model = new MemoryDatapath({ ctTimeouts: c.timeouts, clock: () => clock.now });
  for (const e of c.ipcache) model.maps.upsertIPCache(e);
  model.maps.setPolicy(CFG.id, c.policy);
  await model.loader.reloadEndpoint({ ...CFG, ...(c.options ? { options: c.options } : {}) });
  for (const [i, s] of c.steps.entries()) {
    const label = `${i + 1}. ${s.name}`;
    if (s.policy) {
      syncPolicyMap(fx.policy, s.policy);
      model.maps.setPolicy(CFG.id, s.policy);
    }
    if (s.advance) {
      await sleep(s.advance * 1000 + 20);
      clock.now += s.advance;
    }
    const packet = { ...s.packet, length: frame(s.packet).length };
    const before = readDropCounters(fx.root);
    const passed = run(obj, s.direction, packet);
    const after = readDropCounters(fx.root);
    const out = model.process(CFG.id, s.direction, packet);
    t.equal(passed, s.expect.allowed, `${label}: the kernel ${s.expect.allowed ? 'passes' : 'drops'} it`);
    t.equal(out.verdict.allowed, s.expect.allowed, `${label}: so does the model (${out.ct})`);
    if (!s.expect.allowed) t.equal(after[s.expect.reason!]!.packets, before[s.expect.reason!]!.packets + 1, `${label}: counted as a '${s.expect.reason}' drop`);
    const kernel = fx.ct.entries();
    const mine = model.conntrack.entries();
    t.same(kernel.map((x) => entryText(x.key, x.entry)).sort(), mine.map(([k, e]) => entryText(k, e)).sort(), `${label}: the same conntrack entries`);
    const know = monotonicSeconds();
    const remaining = (list: [CtKey, number][]): Map<string, number> => new Map(list.map(([k, l]) => [ctKeyId(k), l]));
    const kr = remaining(kernel.map((x) => [x.key, x.entry.lifetime - know]));
    for (const [k, e] of mine) {
      const diff = Math.abs((kr.get(ctKeyId(k)) ?? NaN) - (e.lifetime - Math.floor(clock.now)));
      if (!(diff <= 1)) t.fail(`${label}: ${ctKeyId(k)} expires ${e.lifetime - Math.floor(clock.now)} s from now in the model, ${kr.get(ctKeyId(k))} s in the kernel`);
    }
  }
}

t.test('a new connection whose entry cannot be written is dropped as ct-insert-failed, with an event', { skip }, async (t) => {
  const fx = fixture(t);
  // A plain hash map of one entry, full: the kernel refuses the insert (E2BIG), as a map would that cannot evict.
  const full = BpfMap.create({ name: 'ct4_full', type: MapType.HASH, keySize: 14, valueSize: 56, maxEntries: 1 });
  t.teardown(() => full.close());
  full.update(Buffer.alloc(14, 1), Buffer.alloc(56));
  BpfMap.unpin(join(fx.root, 'cellium_ct4_global'));
  full.pin(join(fx.root, 'cellium_ct4_global'));
  const obj = await loadLxcObject(CFG, { bpfRoot: fx.root, reuseMaps: { ...fx.ct.fds(), cellium_ct4_global: full.fd, cellium_ipcache: fx.ipcache.map.fd, cellium_policy: fx.policy.map.fd } });
  t.teardown(() => obj.close());
  const events = DropEventReader.open(fx.root);
  t.teardown(() => events.close());
  syncPolicyMap(fx.policy, [{ identity: 0, direction: 'egress', protocol: 0, port: 0, deny: false }]);
  const before = readDropCounters(fx.root);
  t.notOk(run(obj, 'egress', { src: '10.0.0.2', dst: '10.0.0.10', protocol: 6, sport: 40000, dport: 80, tcpFlags: 0x02 }), 'the allowed SYN is dropped');
  t.equal(readDropCounters(fx.root)['ct-insert-failed']!.packets, before['ct-insert-failed']!.packets + 1, 'counted under its own reason');
  t.match(events.read(), [{ reason: 'ct-insert-failed', direction: 'egress', protocol: 6, dport: 80, src: '10.0.0.2', dst: '10.0.0.10' }], 'a drop event says why');
  t.ok(run(obj, 'egress', { src: '10.0.0.2', dst: '10.0.0.10', protocol: 17, sport: 5000, dport: 53 }), 'UDP (its own map, not full) still passes');
});

t.test('lifetimes are CLOCK_MONOTONIC seconds; kernelVerdict answers from conntrack too', { skip }, async (t) => {
  const fx = fixture(t);
  const obj = await fx.program({ tcp: 8000, any: 77, syn: 60, close: 10 });
  fx.ipcache.set('10.0.0.10/32', { identity: 1000, flags: 0 });
  syncPolicyMap(fx.policy, [{ identity: 1000, direction: 'egress', protocol: 17, port: 53, deny: false }]);
  const req = { src: '10.0.0.2', dst: '10.0.0.10', protocol: 17, sport: 5000, dport: 53 };
  const reply = { src: '10.0.0.10', dst: '10.0.0.2', protocol: 17, sport: 53, dport: 5000 };
  t.strictSame(kernelVerdict(fx.root, CFG.id, 'ingress', reply), { allowed: false, reason: 'policy', peerIdentity: 1000 }, 'before the request: the reply is new and dropped');
  const t0 = monotonicSeconds();
  t.ok(run(obj, 'egress', req));
  const [entry] = fx.ct.entries();
  t.ok(entry && entry.entry.lifetime >= t0 + 77 && entry.entry.lifetime <= monotonicSeconds() + 77, `lifetime ${entry?.entry.lifetime} = now (${t0}) + 77`);
  t.strictSame(kernelVerdict(fx.root, CFG.id, 'ingress', reply), { allowed: true, peerIdentity: 1000 }, 'after it: a reply, allowed');
  t.equal(fx.ct.entries()[0]!.entry.rxPackets, 0, 'asking changed nothing');
});
