// The conntrack layouts of bpf/lib/common.h byte by byte (unprivileged): ipv4_ct_tuple (14 B),
// ipv6_ct_tuple (38 B), ct_entry (56 B), the map specs at configured sizes, and Cilium's
// `bpf ct list` line.
import t from 'tap';
import { endianness } from 'node:os';
import { MapType } from '../../src/bpf/index.js';
import { CT_ENTRY_SIZE, ctEntryCodec, ctEntryLine, ctFlagsText, ctKey4Codec, ctKey6Codec, ctKeyText, ctLifetimeAt, ctMapSpec } from '../../src/maps/index.js';
import type { CtEntry, CtKey } from '../../src/datapath/conntrack.js';

const LE = endianness() === 'LE';

t.test('ipv4_ct_tuple: daddr, saddr, dport, sport (network order), nexthdr, flags', async (t) => {
  const k: CtKey = { family: 'ipv4', daddr: '10.0.0.2', saddr: '10.0.0.3', dport: 80, sport: 42394, nexthdr: 6, flags: 0 };
  const b = Buffer.alloc(14);
  ctKey4Codec.encode(k, b, 0);
  t.equal(b.toString('hex'), '0a0000020a0000030050a59a0600');
  t.same(ctKey4Codec.decode(b, 0), k);
  t.throws(() => ctKey4Codec.encode({ ...k, daddr: 'fd00::1' }, b, 0), /not an IPv4 address/);
});

t.test('ipv6_ct_tuple', async (t) => {
  const k: CtKey = { family: 'ipv6', daddr: 'fd00::2', saddr: 'fd00::10', dport: 443, sport: 1, nexthdr: 17, flags: 3 };
  const b = Buffer.alloc(38);
  ctKey6Codec.encode(k, b, 0);
  t.equal(b.toString('hex'), 'fd000000000000000000000000000002' + 'fd000000000000000000000000000010' + '01bb' + '0001' + '11' + '03');
  t.same(ctKey6Codec.decode(b, 0), k);
});

t.test('ct_entry: offsets and byte order', async (t) => {
  const e: CtEntry = {
    rxPackets: 1, rxBytes: 2, txPackets: 3, txBytes: 4, lifetime: 0x01020304, flags: 0x13, revNat: 7,
    txFlagsSeen: 0x1b, rxFlagsSeen: 0x12, srcSecId: 4242, lastTxReport: 5, lastRxReport: 6,
  };
  const b = Buffer.alloc(CT_ENTRY_SIZE);
  ctEntryCodec.encode(e, b, 0);
  const u64 = (o: number): bigint => (LE ? b.readBigUInt64LE(o) : b.readBigUInt64BE(o));
  const u32 = (o: number): number => (LE ? b.readUInt32LE(o) : b.readUInt32BE(o));
  t.same([u64(0), u64(8), u64(16), u64(24)], [1n, 2n, 3n, 4n], 'rx/tx packets and bytes');
  t.equal(u32(32), 0x01020304, 'lifetime at 32');
  t.equal(ctLifetimeAt(b, 0), 0x01020304);
  t.equal(LE ? b.readUInt16LE(36) : b.readUInt16BE(36), 0x13, 'flags at 36');
  t.equal(b.readUInt16BE(38), 7, 'rev_nat_index at 38, network order');
  t.same([b[42], b[43]], [0x1b, 0x12], 'tx then rx flags seen');
  t.same([u32(44), u32(48), u32(52)], [4242, 5, 6], 'source identity and report times');
  t.same(ctEntryCodec.decode(b, 0), e);
});

t.test('map specs: LRU hash, sizes by kind', async (t) => {
  t.same(ctMapSpec('cellium_ct4_global', { tcp: 2048, any: 1024 }), { name: 'cellium_ct4_global', type: MapType.LRU_HASH, keySize: 14, valueSize: 56, maxEntries: 2048 });
  t.same(ctMapSpec('cellium_ct_any6_global', { tcp: 2048, any: 1024 }), { name: 'cellium_ct_any6_global', type: MapType.LRU_HASH, keySize: 38, valueSize: 56, maxEntries: 1024 });
  t.equal(ctMapSpec('cellium_ct6_global').maxEntries, 524288, "Cilium's default");
});

t.test("Cilium's line format", async (t) => {
  const k: CtKey = { family: 'ipv4', daddr: '10.0.0.2', saddr: '10.0.0.3', dport: 80, sport: 42394, nexthdr: 6, flags: 0 };
  t.equal(ctKeyText(k), 'TCP OUT 10.0.0.2:42394 -> 10.0.0.3:80', 'the connection as it was opened');
  t.equal(ctKeyText({ ...k, flags: 1 | 2 }), 'TCP IN 10.0.0.2:42394 -> 10.0.0.3:80 related');
  t.equal(ctKeyText({ ...k, family: 'ipv6', daddr: 'fd00::2', saddr: 'fd00::3', nexthdr: 58 }), 'ICMPv6 OUT [fd00::2]:42394 -> [fd00::3]:80');
  t.equal(ctFlagsText(0x13), 'Flags=0x0013 [ RxClosing TxClosing SeenNonSyn ]');
  t.equal(ctFlagsText(0), 'Flags=0x0000 [ ]');
  t.equal(ctFlagsText(0x110), 'Flags=0x0110 [ SeenNonSyn Unknown=0x0100 ]');
  const e: CtEntry = { rxPackets: 5, rxBytes: 400, txPackets: 6, txBytes: 500, lifetime: 18000, flags: 0x10, revNat: 0, txFlagsSeen: 0x1b, rxFlagsSeen: 0x1a, srcSecId: 4242, lastTxReport: 9990, lastRxReport: 9991 };
  t.equal(ctEntryLine(k, e, 10000),
    'TCP OUT 10.0.0.2:42394 -> 10.0.0.3:80 expires=18000 (remaining: 8000 sec(s)) RxPackets=5 RxBytes=400 RxFlagsSeen=0x1a LastRxReport=9991 ' +
    'TxPackets=6 TxBytes=500 TxFlagsSeen=0x1b LastTxReport=9990 Flags=0x0010 [ SeenNonSyn ] RevNAT=0 SourceSecurityID=4242');
  t.match(ctEntryLine(k, e, 20000), /remaining: 0 sec\(s\)/, 'an expired entry shows 0');
});
