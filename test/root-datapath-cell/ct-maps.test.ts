// Privileged: the BPF datapath's conntrack maps across agent restarts. Maps pinned with this
// layout are kept with their entries (a restarted agent tracks the same connections); a pinned map
// with another layout (value size, type, or size from --bpf-ct-global-*-max) is removed and created
// anew with a warning naming both layouts, never read with the wrong one; a program bound to the
// old map is no longer "loaded" for isLoaded, so restore reloads it onto the new one.
import t from 'tap';
import { Writable } from 'node:stream';
import { join } from 'node:path';
import { pino } from 'pino';
import { BpfMap, MapType } from '../../src/bpf/index.js';
import { monotonicSeconds } from '../../src/maps/index.js';
import type { CtKey } from '../../src/datapath/conntrack.js';
import { BpfDatapath } from '../../src/cells/datapath-bpf/index.js';
import { silentLogger, type Logger } from '../../src/hive/index.js';
import { bpfConfig, hostVeth, skipUnlessBpf } from './helpers.js';

const skip = skipUnlessBpf();

function capture(): { log: Logger; lines: () => Array<Record<string, unknown>> } {
  const out: string[] = [];
  const log: Logger = pino({ level: 'info' }, new Writable({ write: (chunk: Buffer, _e, cb) => (out.push(chunk.toString()), cb()) }));
  return { log, lines: () => out.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

const key: CtKey = { family: 'ipv4', daddr: '10.5.0.1', saddr: '10.5.0.2', dport: 80, sport: 1234, nexthdr: 6, flags: 0 };

t.test('pinned conntrack maps of this layout are kept with their entries', { skip }, async (t) => {
  const cfg = bpfConfig(t);
  const first = new BpfDatapath(cfg, silentLogger());
  first.start();
  const lifetime = monotonicSeconds() + 500;
  first.kernel.ct.mapOf(key).set(key, { rxPackets: 3, rxBytes: 0, txPackets: 4, txBytes: 0, lifetime, flags: 0x10, revNat: 0, txFlagsSeen: 0x12, rxFlagsSeen: 0x12, srcSecId: 4242, lastTxReport: 0, lastRxReport: 0 });
  const ids = first.kernel.ct.ids();
  await first.stop();
  const { log, lines } = capture();
  const second = new BpfDatapath(cfg, log);
  second.start();
  t.teardown(() => second.stop());
  t.same(second.kernel.ct.ids(), ids, 'the same maps');
  t.match(second.kernel.ct.mapOf(key).get(key), { lifetime, srcSecId: 4242, txPackets: 4 }, 'with their entries');
  t.notOk(lines().some((l) => /another layout/.test(String(l.msg))), 'nothing was recreated');
});

t.test('a pinned map of another layout or size is recreated, with a warning', { skip }, async (t) => {
  const cfg = bpfConfig(t, { bpfCtGlobalTcpMax: 2048 });
  // An older layout: 48-byte values; and an any-map of the wrong size.
  const old = BpfMap.create({ name: 'cellium_ct4_global', type: MapType.LRU_HASH, keySize: 14, valueSize: 48, maxEntries: 2048 });
  old.pin(join(cfg.bpfRoot, 'cellium_ct4_global'));
  old.update(Buffer.alloc(14, 7), Buffer.alloc(48, 0xff));
  const small = BpfMap.create({ name: 'cellium_ct_any4_global', type: MapType.LRU_HASH, keySize: 14, valueSize: 56, maxEntries: 4096 });
  small.pin(join(cfg.bpfRoot, 'cellium_ct_any4_global'));
  const hash = BpfMap.create({ name: 'cellium_ct6_global', type: MapType.HASH, keySize: 38, valueSize: 56, maxEntries: 2048 });
  hash.pin(join(cfg.bpfRoot, 'cellium_ct6_global'));
  const { log, lines } = capture();
  const dp = new BpfDatapath(cfg, log);
  dp.start();
  t.teardown(() => dp.stop());
  const warned = lines().filter((l) => l.level === 40 && /another layout/.test(String(l.msg)));
  t.same(warned.map((l) => [l.name, l.have, l.want]).sort(), [
    ['cellium_ct4_global', 'lru_hash key 14 value 48 max 2048 flags 0', 'lru_hash key 14 value 56 max 2048 flags 0'],
    ['cellium_ct6_global', 'hash key 38 value 56 max 2048 flags 0', 'lru_hash key 38 value 56 max 2048 flags 0'],
    ['cellium_ct_any4_global', 'lru_hash key 14 value 56 max 4096 flags 0', 'lru_hash key 14 value 56 max 1024 flags 0'],
  ], 'one warning per replaced map, with the layout found and the one wanted');
  const m = BpfMap.openPinned(join(cfg.bpfRoot, 'cellium_ct4_global'));
  t.teardown(() => m.close());
  t.same([m.info.valueSize, m.info.id === old.info.id, [...m.keys()].length], [56, false, 0], 'a new, empty map with the right layout is pinned');
  for (const x of [old, small, hash]) x.close();
});

t.test('a program bound to a replaced conntrack map is not loaded; a reload binds the new one', { skip }, async (t) => {
  const cfg = bpfConfig(t, { bpfAttachMode: 'legacy' });
  const link = hostVeth(t);
  const ep = { id: 55, identity: 70000, ipv4: '10.78.0.55', ifName: link.ifName, ifIndex: link.ifIndex, mac: '02:00:00:00:00:55', hostMac: link.mac };
  const first = new BpfDatapath(cfg, silentLogger());
  first.start();
  await first.loader.reloadEndpoint(ep);
  t.ok(await first.loader.isLoaded(ep), 'loaded');
  await first.stop();
  const restarted = new BpfDatapath({ ...cfg, bpfCtGlobalAnyMax: 2048 }, silentLogger());
  restarted.start();
  t.teardown(async () => {
    await restarted.loader.unloadEndpoint(ep.id, ep.ifName);
    await restarted.stop();
  });
  t.notOk(await restarted.loader.isLoaded(ep), 'the any-maps were recreated at another size: the program is stale');
  await restarted.loader.reloadEndpoint(ep);
  t.ok(await restarted.loader.isLoaded(ep), 'reloaded onto the new maps');
  const lifetimes = new BpfDatapath({ ...cfg, bpfCtGlobalAnyMax: 2048 }, silentLogger(), { ctTimeouts: { tcp: 100, any: 60, syn: 60, close: 10 } });
  lifetimes.start();
  t.teardown(() => lifetimes.stop());
  t.same(lifetimes.kernel.ct.ids(), restarted.kernel.ct.ids(), 'an agent with other lifetimes on the same maps');
  t.notOk(await lifetimes.loader.isLoaded(ep), 'finds the program loaded with other lifetimes stale');
});
