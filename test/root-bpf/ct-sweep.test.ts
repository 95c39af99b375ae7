// The conntrack sweeps on real maps (root), worked through in many small batches with a yield to
// the event loop after every one (chunk 64, slices of 0 ms), as the agent's collector runs them
// over a large map: expired entries go and live ones stay, exactly; a deleted endpoint's addresses
// are scrubbed on either side of a connection (IPv4 and IPv6, several addresses at once, other
// families and unparsable ones ignored) and nothing else is; entries the datapath removed between
// two batches are not counted; an abort stops a sweep between slices.
import t, { type Test } from 'tap';
import { CtMaps, monotonicSeconds, sweepAddresses, sweepExpired, sweepMap, type CtMap } from '../../src/maps/index.js';
import type { CtEntry, CtKey } from '../../src/datapath/conntrack.js';
import { skipUnlessBpf, testBpfRoot } from '../bpf/fixtures/topology.js';

const skip = skipUnlessBpf();
const SMALL = { chunk: 64, sliceMs: 0 };

const entry = (lifetime: number): CtEntry => ({
  rxPackets: 0, rxBytes: 0, txPackets: 1, txBytes: 60, lifetime, flags: 0, revNat: 0, txFlagsSeen: 0, rxFlagsSeen: 0, srcSecId: 1, lastTxReport: 0, lastRxReport: 0,
});
const tcp4 = (daddr: string, saddr: string, sport: number): CtKey => ({ family: 'ipv4', daddr, saddr, dport: 80, sport, nexthdr: 6, flags: 0 });
const tcp6 = (daddr: string, saddr: string, sport: number): CtKey => ({ family: 'ipv6', daddr, saddr, dport: 80, sport, nexthdr: 6, flags: 1 });

function opened(t: Test): CtMaps {
  const { root, remove } = testBpfRoot();
  t.teardown(remove);
  const ct = CtMaps.open(root, { tcp: 8192, any: 1024 });
  t.teardown(() => ct.close());
  return ct;
}

const ports = (m: CtMap): number[] => [...m.entries()].map(([k]) => k.sport).sort((a, b) => a - b);

t.test('expired entries go and live ones stay, over many batches with a yield after each', { skip }, async (t) => {
  const ct = opened(t);
  const map = ct.maps.cellium_ct4_global;
  const now = monotonicSeconds();
  const live: number[] = [];
  for (let i = 0; i < 3000; i++) {
    // a third expired (by 1 to 3 s), a third due exactly now (alive), a third far off
    const lifetime = i % 3 === 0 ? now - 1 - (i % 7 % 3) : i % 3 === 1 ? now : now + 3600;
    map.set(tcp4(`10.7.${i >> 8}.${i & 255}`, '10.8.0.1', 1000 + i), entry(lifetime));
    if (i % 3) live.push(1000 + i);
  }
  let turns = 0;
  const counting = setInterval(() => turns++, 0);
  const r = await sweepExpired(map.map, now, SMALL);
  clearInterval(counting);
  t.same(r, { scanned: 3000, deleted: 1000 });
  t.same(ports(map), live, 'exactly the live entries are left');
  t.ok(turns > 0, 'timers ran while the sweep was going on (it yielded to the event loop)');
  t.same(await sweepExpired(map.map, now, SMALL), { scanned: 2000, deleted: 0 }, 'a second sweep finds nothing more');
});

t.test("a scrub deletes every connection naming one of the addresses, on either side, and nothing else", { skip }, async (t) => {
  const ct = opened(t);
  const v4 = ct.maps.cellium_ct4_global;
  const v6 = ct.maps.cellium_ct6_global;
  const far = monotonicSeconds() + 3600;
  const kept4: number[] = [];
  const kept6: number[] = [];
  for (let i = 0; i < 2000; i++) {
    const peer = `10.9.${i >> 8}.${i & 255}`;
    // every 10th from 10.1.0.5, every 10th (shifted) to 10.1.0.6, every 10th (shifted) 10.1.0.50 (not scrubbed)
    const k = i % 10 === 0 ? tcp4(peer, '10.1.0.5', i) : i % 10 === 1 ? tcp4('10.1.0.6', peer, i) : i % 10 === 2 ? tcp4(peer, '10.1.0.50', i) : tcp4(peer, '10.2.0.1', i);
    v4.set(k, entry(far));
    if (i % 10 > 1) kept4.push(i);
    const p6 = `fd00:9::${i.toString(16)}`;
    const k6 = i % 10 === 0 ? tcp6('fd00::5', p6, i) : i % 10 === 1 ? tcp6(p6, 'fd00::6', i) : i % 10 === 2 ? tcp6(p6, 'fd00::5:0', i) : tcp6(p6, 'fd00::1', i);
    v6.set(k6, entry(far));
    if (i % 10 > 1) kept6.push(i);
  }
  const addresses = ['10.1.0.5', 'fd00::5', '10.1.0.6', 'fd00::6', 'not-an-address', '10.1.0.5'];
  t.same(await sweepAddresses(v4.map, 'ipv4', addresses, SMALL), { scanned: 2000, deleted: 400 });
  t.same(ports(v4), kept4, 'IPv4: only the connections of 10.1.0.5 and 10.1.0.6 are gone (10.1.0.50 shares a prefix, stays)');
  t.same(await sweepAddresses(v6.map, 'ipv6', addresses, SMALL), { scanned: 2000, deleted: 400 });
  t.same(ports(v6), kept6, 'IPv6: only the connections of fd00::5 and fd00::6 are gone (fd00::5:0 stays)');
  t.same(await sweepAddresses(v4.map, 'ipv4', ['fd00::5', 'nonsense'], SMALL), { scanned: 0, deleted: 0 }, 'no address of the family: nothing scanned');
});

t.test('entries the datapath removed before the delete are not counted; an abort stops the sweep between slices', { skip }, async (t) => {
  const ct = opened(t);
  const map = ct.maps.cellium_ct4_global;
  const now = monotonicSeconds();
  const fill = (): void => {
    for (let i = 0; i < 1000; i++) map.set(tcp4(`10.7.${i >> 8}.${i & 255}`, '10.8.0.1', i), entry(now - 10));
  };
  fill();
  // every other entry vanishes between the batch lookup that read it and the batch's delete
  let seen = 0;
  const r = await sweepMap(map.map, (keys, ko) => {
    if (seen++ % 2 === 0) map.map.delete(keys.subarray(ko, ko + map.map.keySize));
    return true;
  }, SMALL);
  t.same(r, { scanned: 1000, deleted: 500 }, 'the sweep counts only its own deletes');
  t.equal([...map.entries()].length, 0, 'the map is empty');
  fill();
  const ac = new AbortController();
  setImmediate(() => ac.abort(new Error('stopped'))); // runs at the sweep's first yield, after its first batch
  await t.rejects(sweepExpired(map.map, now, { ...SMALL, signal: ac.signal }), /stopped/, 'the abort surfaces');
  const left = [...map.entries()].length;
  t.ok(left > 0 && left < 1000, `the sweep stopped part way (${left} of 1000 left)`);
});
