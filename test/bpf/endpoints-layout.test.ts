// The shared bpf_lxc's endpoint entry (struct endpoint_info, bpf/lib/common.h) byte by byte, and the
// specs of cellium_endpoints and cellium_policy_maps against bpf/lib/maps.h.
import t from 'tap';
import { ENDPOINT_F_CT_DISABLED, ENDPOINT_F_NO_ACCOUNTING, ENDPOINTS_MAP_SPEC, POLICY_MAPS_MAP_SPEC, POLICY_MAP_SPEC, endpointInfoCodec, type EndpointInfo } from '../../src/maps/index.js';
import { endpointInfo } from '../../src/cells/datapath-bpf/lxc/index.js';

t.test('struct endpoint_info: 44 bytes, host order, addresses as on the wire', async (t) => {
  const v: EndpointInfo = {
    identity: 0x01020304, endpointId: 0x0506, flags: ENDPOINT_F_CT_DISABLED, ifIndex: 0x0708090a,
    ipv4: '10.0.0.2', ipv6: 'fd00::2', mac: '02:00:00:00:00:01', hostMac: '02:00:00:00:00:02',
  };
  const b = Buffer.alloc(endpointInfoCodec.size);
  endpointInfoCodec.encode(v, b, 0);
  t.equal(b.length, 44);
  t.equal(b.readUInt32LE(0), 0x01020304, 'identity at 0');
  t.equal(b.readUInt16LE(4), 0x0506, 'endpoint_id at 4');
  t.equal(b[6], 1, 'flags at 6');
  t.equal(b.readUInt32LE(8), 0x0708090a, 'ifindex at 8');
  t.strictSame([...b.subarray(12, 16)], [10, 0, 0, 2], 'ipv4 at 12');
  t.strictSame([...b.subarray(16, 32)], [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2], 'ipv6 at 16');
  t.equal(b.subarray(32, 38).toString('hex'), '020000000001', 'mac at 32');
  t.equal(b.subarray(38, 44).toString('hex'), '020000000002', 'host_mac at 38');
  t.strictSame(endpointInfoCodec.decode(b, 0), v, 'decodes back');
  const none = Buffer.alloc(44);
  endpointInfoCodec.encode({ ...v, ipv4: '', ipv6: '' }, none, 0);
  t.ok(none.subarray(12, 32).every((x) => x === 0), 'no address of a family: zeros');
  t.throws(() => endpointInfoCodec.encode({ ...v, ipv4: 'fd00::1' }, Buffer.alloc(44), 0), /not an ipv4 address/);
});

t.test('an endpoint config becomes its entry: options as flags', async (t) => {
  const cfg = { id: 9, identity: 4242, ipv4: '10.0.0.9', ifName: 'lxc9', ifIndex: 31, mac: '02:00:00:00:00:09', hostMac: '02:00:00:00:00:0a' };
  t.strictSame(endpointInfo(cfg), { identity: 4242, endpointId: 9, flags: 0, ifIndex: 31, ipv4: '10.0.0.9', ipv6: '', mac: cfg.mac, hostMac: cfg.hostMac });
  t.equal(endpointInfo({ ...cfg, options: { Conntrack: 'Disabled' } }).flags, ENDPOINT_F_CT_DISABLED);
  t.equal(endpointInfo({ ...cfg, options: { ConntrackAccounting: 'Disabled' } }).flags, ENDPOINT_F_NO_ACCOUNTING);
});

t.test('map specs match bpf/lib/maps.h', async (t) => {
  t.match(ENDPOINTS_MAP_SPEC, { name: 'cellium_endpoints', type: 1, keySize: 4, valueSize: 44, maxEntries: 4096 });
  t.match(POLICY_MAPS_MAP_SPEC, { name: 'cellium_policy_maps', type: 12, keySize: 4, valueSize: 4, maxEntries: 4096 });
  t.equal(POLICY_MAPS_MAP_SPEC.inner, POLICY_MAP_SPEC, 'inner maps have the policy map\'s shape');
});
