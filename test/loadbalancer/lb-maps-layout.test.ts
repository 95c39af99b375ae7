// The LB map layouts of bpf/lib/lb.h byte by byte (unprivileged), and (privileged) the pinned
// kernel maps written by the reconciler's operations, read back, and taken over after a restart.
import t from 'tap';
import { endianness } from 'node:os';
import { BpfMap, MapType } from '../../src/bpf/index.js';
import { affinityMatchKeyCodec, backendValueCodec, lbMapSpecs, openLBMaps, revNatValueCodec, serviceKeyCodec, serviceValueCodec } from '../../src/maps/index.js';
import { LBServiceManager } from '../../src/cells/loadbalancer/index.js';
import { LBOps } from '../../src/cells/loadbalancer/lb-ops.js';
import { Reconciler } from '../../src/lib/reconciler/index.js';
import { skipUnlessBpf, testBpfRoot } from '../bpf/fixtures/topology.js';
import { be, upsert } from './helpers.js';
import { cli } from '../cli/fake-agent.js';

const LE = endianness() === 'LE';
const h16 = (n: number): string => (LE ? [n & 0xff, n >> 8] : [n >> 8, n & 0xff]).map((x) => x.toString(16).padStart(2, '0')).join('');
const h32 = (n: number): string => { const b = Buffer.alloc(4); if (LE) b.writeUInt32LE(n); else b.writeUInt32BE(n); return b.toString('hex'); };

t.test('lb4_key / lb6_key: address, dport (network order), backend_slot, proto, scope, pad', async (t) => {
  const k = { address: '10.96.0.10', port: 80, slot: 3, proto: 6, scope: 1 };
  const b = Buffer.alloc(12);
  serviceKeyCodec(4).encode(k, b, 0);
  t.equal(b.toString('hex'), '0a60000a' + '0050' + h16(3) + '06' + '01' + '0000');
  t.same(serviceKeyCodec(4).decode(b, 0), k);
  const b6 = Buffer.alloc(24);
  serviceKeyCodec(6).encode({ ...k, address: 'fd00::a' }, b6, 0);
  t.equal(b6.toString('hex'), 'fd00000000000000000000000000000a' + '0050' + h16(3) + '0601' + '0000');
  t.throws(() => serviceKeyCodec(4).encode({ ...k, address: 'fd00::a' }, b, 0), /not an IPv4 address/);
});

t.test('lb4_service, lb4_backend, lb6_backend, reverse NAT, affinity match', async (t) => {
  const b = Buffer.alloc(12);
  serviceValueCodec.encode({ backendId: 10800, count: 3, qcount: 1, revNat: 7, flags: 0x10, flags2: 0x20 }, b, 0);
  t.equal(b.toString('hex'), h32(10800) + h16(3) + h16(7) + '10' + '20' + h16(1));
  const be4 = Buffer.alloc(12);
  backendValueCodec(4).encode({ address: '10.0.1.2', port: 8080, proto: 6, flags: 1, clusterId: 0, zone: 0 }, be4, 0);
  t.equal(be4.toString('hex'), '0a000102' + '1f90' + '06' + '01' + '0000' + '00' + '00');
  t.equal(backendValueCodec(6).size, 24);
  const rn = Buffer.alloc(8);
  revNatValueCodec(4).encode({ address: '10.96.0.10', port: 80 }, rn, 0);
  t.equal(rn.toString('hex'), '0a60000a00500000');
  t.equal(revNatValueCodec(6).size, 20);
  const am = Buffer.alloc(8);
  affinityMatchKeyCodec.encode({ backendId: 5, revNat: 2 }, am, 0);
  t.equal(am.toString('hex'), h32(5) + h16(2) + '0000');
  const specs = lbMapSpecs(65536, 16381);
  t.match(specs.services4, { name: 'cellium_lb4_services', type: MapType.HASH, keySize: 12, valueSize: 12, maxEntries: 65536 });
  t.match(specs.affinity4, { name: 'cellium_lb4_affinity', type: MapType.LRU_HASH, keySize: 16, valueSize: 16 });
  t.match(specs.maglev4, { keySize: 2, valueSize: 4 * 16381, flags: 1 });
});

const skip = skipUnlessBpf();

t.test('the kernel maps: pinned, written in order, read back, taken over after a restart', { skip }, async (t) => {
  const { root, remove } = testBpfRoot();
  t.teardown(remove);
  const maps = openLBMaps(root, 1024, 251);
  const mgr = new LBServiceManager();
  mgr.upsert(upsert('default/web', '10.160.96.10', 80, [be('10.160.1.1', 8080), be('10.160.1.2', 8080, 'terminating')]));
  mgr.upsert(upsert('default/web6', 'fd00:160::10', 80, [be('fd00:160:1::1', 8080)]));
  const r = new Reconciler(mgr.frontends, new LBOps(maps, { algorithm: 'maglev', maglevTableSize: 251, maxBackends: 1024 }));
  r.start();
  await r.flush();
  t.same(mgr.list().map((s) => s.state), ['done', 'done']);
  for (const name of ['cellium_lb4_services', 'cellium_lb6_services', 'cellium_lb4_backends', 'cellium_lb6_backends', 'cellium_lb4_reverse_nat', 'cellium_lb6_reverse_nat', 'cellium_lb4_affinity', 'cellium_lb6_affinity', 'cellium_lb_affinity_match', 'cellium_lb4_maglev', 'cellium_lb6_maglev']) {
    const m = BpfMap.openPinned(`${root}/${name}`);
    t.ok(m.info.id > 0, `${name} is pinned`);
    m.close();
  }
  const master = maps.services4.get({ address: '10.160.96.10', port: 80, slot: 0, proto: 6, scope: 0 });
  t.match(master, { count: 1, qcount: 1, revNat: 1 });
  t.same(maps.services4.entries().length, 4, 'master, two slots, the wildcard');
  t.same(maps.backends6.entries().map(([, v]) => v.address), ['fd00:160:1::1']);
  t.same(maps.revNat6.get(2), { address: 'fd00:160::10', port: 80 });
  const table = maps.maglev4.get(1)!;
  t.equal(table.length, 251);
  t.ok([...table].every((id) => id === master!.backendId || id === maps.services4.get({ address: '10.160.96.10', port: 80, slot: 1, proto: 6, scope: 0 })!.backendId), 'the Maglev table holds the active backend only');
  const listed = await cli('/nonexistent.sock', ['bpf', 'lb', 'list', '--bpf-root', root]);
  t.equal(listed.code, 0, listed.stderr);
  t.match(listed.stdout, /^SERVICE ADDRESS\s+BACKEND ADDRESS \(REVNAT_ID\) \(SLOT\)$/m);
  t.match(listed.stdout, /^10\.160\.96\.10:80\/TCP\s+0\.0\.0\.0:0 \(1\) \(0\) \[ClusterIP, non-routable\]$/m);
  t.match(listed.stdout, /^\s+10\.160\.1\.1:8080\/TCP \(active\) \(1\) \(1\)$/m);
  t.match(listed.stdout, /^\s+10\.160\.1\.2:8080\/TCP \(terminating\) \(1\) \(2\)$/m);
  t.match(listed.stdout, /^\[fd00:160::10\]:80\/TCP\s+\[::\]:0 \(2\) \(0\)/m);
  const json = await cli('/nonexistent.sock', ['-o', 'json', 'bpf', 'lb', 'list', '--bpf-root', root]);
  t.equal((JSON.parse(json.stdout) as unknown[]).length, 4, 'two frontends and their wildcards');
  const missing = await cli('/nonexistent.sock', ['bpf', 'lb', 'list', '--bpf-root', `${root}-nope`]);
  t.equal(missing.code, 1);
  t.match(missing.stderr, /no LB maps pinned under .*-nope/);
  await r.stop();
  maps.close();

  const again = openLBMaps(root, 1024, 251);
  t.teardown(() => again.close());
  const ops = new LBOps(again, { algorithm: 'maglev', maglevTableSize: 251, maxBackends: 1024 });
  t.equal(ops.restore(), 2, 'both frontends found');
  const empty = new Reconciler(new LBServiceManager().frontends, ops);
  const { pruned } = await empty.prune();
  t.equal(pruned, 2);
  t.same([again.services4, again.services6, again.backends4, again.backends6, again.revNat4, again.revNat6, again.maglev4].map((m) => m.entries().length), [0, 0, 0, 0, 0, 0, 0], 'pruned to nothing');
});
