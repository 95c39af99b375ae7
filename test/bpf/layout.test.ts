// Codecs of the C structs and the per-endpoint constants (unprivileged): exact bytes as the C
// side lays them out (bpf/lib/common.h), and round trips.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import t from 'tap';
import { type Codec } from '../../src/bpf/index.js';
import { IPCACHE_MAP_SPEC, LXC_MAP_SPEC, POLICY_MAP_SPEC, formatMac, ipcacheKeyCodec, ipcacheValueCodec, lxcKeyCodec, lxcValueCodec, macBytes, policyKeyCodec, policyValueCodec } from '../../src/maps/index.js';
import { lxcBuildId, lxcConstants } from '../../src/cells/datapath-bpf/lxc/index.js';
import { objectPath } from '../../src/bpf/native.js';

function enc<T>(c: Codec<T>, v: T): Buffer {
  const b = Buffer.alloc(c.size);
  c.encode(v, b, 0);
  return b;
}

t.test('ipcache key and value', async (t) => {
  const k = enc(ipcacheKeyCodec, '10.1.0.0/16');
  t.equal(k.length, IPCACHE_MAP_SPEC.keySize);
  t.strictSame([...k.subarray(0, 12)], [48, 0, 0, 0, 4, 0, 0, 0, 10, 1, 0, 0], 'prefixlen = 32 + 16, family 4, address in network order');
  t.ok(k.subarray(12).every((b) => b === 0));
  t.equal(ipcacheKeyCodec.decode(k, 0), '10.1.0.0/16');
  t.equal(ipcacheKeyCodec.decode(enc(ipcacheKeyCodec, '10.1.2.3/16'), 0), '10.1.0.0/16', 'host bits cleared');
  const k6 = enc(ipcacheKeyCodec, 'fd00::1');
  t.equal(k6.readUInt32LE(0), 32 + 128, 'a bare address is a host prefix');
  t.equal(k6[4], 6);
  t.equal(ipcacheKeyCodec.decode(k6, 0), 'fd00::1/128');
  t.throws(() => enc(ipcacheKeyCodec, 'nope'), /not a CIDR/);
  const v = enc(ipcacheValueCodec, { identity: 0x01020304, flags: 5 });
  t.strictSame([...v], [4, 3, 2, 1, 5, 0, 0, 0]);
  t.strictSame(ipcacheValueCodec.decode(v, 0), { identity: 0x01020304, flags: 5 });
  const bad = Buffer.from(k);
  bad[4] = 9;
  t.throws(() => ipcacheKeyCodec.decode(bad, 0), /unknown address family/);
});

t.test('lxc key and value', async (t) => {
  const k = enc(lxcKeyCodec, '10.0.0.2');
  t.equal(k.length, LXC_MAP_SPEC.keySize);
  t.strictSame([...k.subarray(0, 4)], [10, 0, 0, 2]);
  t.equal(k[16], 4);
  t.equal(lxcKeyCodec.decode(k, 0), '10.0.0.2');
  t.equal(lxcKeyCodec.decode(enc(lxcKeyCodec, 'FD00:0::2'), 0), 'fd00::2', 'decodes canonically');
  t.throws(() => enc(lxcKeyCodec, '10.0.0.0/8'), /not an IP address/);
  const v = { ifIndex: 12, identity: 70000, endpointId: 42, mac: '02:aa:bb:cc:dd:ee' };
  const b = enc(lxcValueCodec, v);
  t.equal(b.length, LXC_MAP_SPEC.valueSize);
  t.strictSame([...b.subarray(8)], [42, 0, 2, 0xaa, 0xbb, 0xcc, 0xdd, 0xee]);
  t.strictSame(lxcValueCodec.decode(b, 0), v);
});

t.test('policy codecs match the map spec', async (t) => {
  t.equal(policyKeyCodec.size, POLICY_MAP_SPEC.keySize);
  t.equal(policyValueCodec.size, POLICY_MAP_SPEC.valueSize);
  const k = { prefixLen: 48, egress: false, identity: 9, protocol: 17, dport: 0 };
  t.strictSame(policyKeyCodec.decode(enc(policyKeyCodec, k), 0), k);
  t.equal(policyValueCodec.decode(enc(policyValueCodec, true), 0), true);
});

t.test('MACs', async (t) => {
  t.strictSame([...macBytes('02:00:0a:0B:ff:10')], [2, 0, 10, 11, 255, 16]);
  t.strictSame([...macBytes('')], [0, 0, 0, 0, 0, 0]);
  t.throws(() => macBytes('02:00'), /not a MAC/);
  t.equal(formatMac(Buffer.from([2, 0, 10, 11, 255, 16])), '02:00:0a:0b:ff:10');
});

t.test('bpf_lxc constants of an endpoint', async (t) => {
  const c = lxcConstants({ id: 42, identity: 70000, ipv4: '10.0.0.2', ipv6: 'fd00::2', ifName: 'lxc1', ifIndex: 9, mac: '02:00:00:00:00:01', hostMac: '02:00:00:00:00:02' });
  t.strictSame(Object.keys(c).sort(), [
    'ct_accounting', 'ct_enabled', 'ct_lifetime_any', 'ct_lifetime_close', 'ct_lifetime_syn', 'ct_lifetime_tcp', 'ct_report_interval',
    'endpoint_id', 'endpoint_identity', 'endpoint_ifindex', 'endpoint_ipv4', 'endpoint_ipv6', 'endpoint_mac', 'host_mac', 'lxc_build',
  ]);
  const object = readFileSync(objectPath('bpf_lxc'));
  t.strictSame(c.lxc_build, createHash('sha256').update(object).digest().subarray(0, 8), 'the build: the object file\'s SHA-256, first 8 bytes');
  t.strictSame(lxcBuildId(Buffer.concat([object, Buffer.from([0])])).equals(c.lxc_build!), false, 'other bytes, another build');
  t.strictSame([c.ct_lifetime_tcp, c.ct_lifetime_any, c.ct_lifetime_syn, c.ct_lifetime_close, c.ct_report_interval].map((b) => b!.readUInt32LE(0)), [8000, 60, 60, 10, 5], "Cilium's default lifetimes and monitor aggregation interval");
  t.strictSame([...c.ct_enabled!, ...c.ct_accounting!], [1, 1], 'conntrack and its accounting on by default');
  const off = lxcConstants({ id: 1, identity: 1, ipv4: '10.0.0.3', ifName: 'x', ifIndex: 1, mac: '', hostMac: '', options: { Conntrack: 'Disabled', ConntrackAccounting: 'Disabled' } }, { tcp: 100, any: 5, syn: 7, close: 3, report: 9 });
  t.strictSame([...off.ct_enabled!, ...off.ct_accounting!], [0, 0], 'the endpoint options turn them off');
  t.equal(off.ct_lifetime_syn!.readUInt32LE(0), 7, 'lifetimes from the flags');
  t.equal(off.ct_report_interval!.readUInt32LE(0), 9, 'the aggregation interval from its flag');
  t.strictSame([...c.endpoint_id!], [42, 0]);
  t.equal(c.endpoint_identity!.readUInt32LE(0), 70000);
  t.strictSame([...c.endpoint_ipv4!], [10, 0, 0, 2]);
  t.equal(c.endpoint_ipv6!.length, 16);
  t.equal(c.endpoint_ipv6![0], 0xfd);
  t.equal(c.endpoint_ipv6![15], 2);
  t.strictSame([...c.host_mac!], [2, 0, 0, 0, 0, 2]);
  const v4only = lxcConstants({ id: 1, identity: 1, ipv4: '10.0.0.3', ifName: 'x', ifIndex: 1, mac: '', hostMac: '' });
  t.ok(v4only.endpoint_ipv6!.every((b) => b === 0), 'no IPv6: zeros');
  t.throws(() => lxcConstants({ id: 1, identity: 1, ipv4: 'fd00::1', ifName: 'x', ifIndex: 1, mac: '', hostMac: '' }), /not an ipv4 address/);
});
