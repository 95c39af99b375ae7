// BIG TCP in the CNI server over a FakeNet: both ends of the veth get the host device's sizes in
// the setup batches; a missing device or a kernel without the attributes is one warning and a
// successful ADD; the default-route device is read from /proc/net/route (then ipv6_route).
import t from 'tap';
import { pino } from 'pino';
import { CniServer, hostIfName } from '../../src/cells/cni-server/index.js';
import { defaultRouteDevice } from '../../src/cells/cni-server/bigtcp.js';
import { cniReq, rig } from './helpers.js';

const NS = '/run/netns/p1';

/** A rig whose server has BIG TCP settings and a logger that keeps warning lines. */
async function bigRig(t: Parameters<typeof rig>[0], cfg: Record<string, unknown>, hostSizes: Record<string, number> | undefined) {
  const r = await rig(t);
  r.net.addNetns(NS);
  await r.net.host().createVeth({ name: 'uplink0', peerName: 'uplink0p' });
  if (hostSizes) Object.assign(r.net.hostNs.links.get('uplink0')!, hostSizes);
  const warnings: string[] = [];
  const log = pino({ level: 'warn' }, { write: (line: string) => void warnings.push((JSON.parse(line) as { msg: string }).msg) });
  const server = new CniServer({ ...r.deps, cfg: { cniMtu: 1500, ...cfg }, log });
  server.setReady(true);
  return { r, server, warnings };
}

const BIG = { gsoMaxSize: 196608, groMaxSize: 196608, tsoMaxSize: 524280, gsoIpv4MaxSize: 196608, groIpv4MaxSize: 185000 };

t.test('both ends get the host device sizes, per family flag', async (t) => {
  const { r, server, warnings } = await bigRig(t, { enableIpv4BigTcp: true, enableIpv6BigTcp: true, bigTcpDevice: 'uplink0' }, BIG);
  const resp = await server.handle(cniReq('ADD'));
  t.equal(resp.exitCode, 0, resp.body);
  const want = { gsoMaxSize: 196608, groMaxSize: 196608, gsoIpv4MaxSize: 196608, groIpv4MaxSize: 185000 };
  t.match(r.net.hostNs.links.get(hostIfName('c1', 'eth0')), want, 'host side');
  t.match(r.net.namespaces.get(NS)!.links.get('eth0'), { ...want, up: true }, 'pod side, in the batch that brings it up');
  t.same(warnings, [], 'no warning');

  const v6only = await bigRig(t, { enableIpv6BigTcp: true, bigTcpDevice: 'uplink0' }, BIG);
  t.equal((await v6only.server.handle(cniReq('ADD'))).exitCode, 0);
  const pod = v6only.r.net.namespaces.get(NS)!.links.get('eth0')!;
  t.equal(pod.gsoMaxSize, 196608);
  t.equal(pod.gsoIpv4MaxSize, undefined, 'IPv4 sizes only with --enable-ipv4-big-tcp');
});

t.test('off by default: no offload step at all', async (t) => {
  const { r, server } = await bigRig(t, {}, BIG);
  t.equal((await server.handle(cniReq('ADD'))).exitCode, 0);
  t.equal(r.net.namespaces.get(NS)!.links.get('eth0')!.gsoMaxSize, undefined);
  t.notOk(r.net.calls.includes('setOffload@host'), 'the host batch has no setLink');
});

t.test('a kernel without the attributes, or no such device: one warning, the ADDs succeed', async (t) => {
  const old = await bigRig(t, { enableIpv4BigTcp: true, enableIpv6BigTcp: true, bigTcpDevice: 'uplink0' }, { gsoMaxSize: 65536 });
  old.r.net.addNetns('/run/netns/p2');
  for (const id of ['1', '2']) {
    const resp = await old.server.handle(cniReq('ADD', { containerId: `c${id}`, netns: `/run/netns/p${id}`, args: `K8S_POD_NAMESPACE=default;K8S_POD_NAME=p${id}` }));
    t.equal(resp.exitCode, 0, `ADD c${id} succeeds`);
  }
  t.equal(old.warnings.length, 2, 'one warning per family, once for all ADDs');
  t.match(old.warnings[0], /IPv6 BIG TCP is off: this kernel does not report IFLA_GRO_MAX_SIZE/);
  t.match(old.warnings[1], /IPv4 BIG TCP is off: .*IFLA_GSO_IPV4_MAX_SIZE/);
  t.equal(old.r.net.namespaces.get(NS)!.links.get('eth0')!.gsoMaxSize, undefined, 'nothing set');

  const missing = await bigRig(t, { enableIpv6BigTcp: true, bigTcpDevice: 'nosuch0' }, BIG);
  t.equal((await missing.server.handle(cniReq('ADD'))).exitCode, 0);
  t.match(missing.warnings, [/host device nosuch0 does not exist; set --big-tcp-device/]);

  const small = await bigRig(t, { enableIpv6BigTcp: true, bigTcpDevice: 'uplink0' }, { gsoMaxSize: 65536, groMaxSize: 65536 });
  t.equal((await small.server.handle(cniReq('ADD'))).exitCode, 0);
  t.match(small.warnings, [/IPv6 BIG TCP has no effect: host device uplink0 allows only 65536 .*ip link set uplink0 gso_max_size 196608/]);
});

t.test('the default-route device', async (t) => {
  const route = 'Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\nlxc1\t0A000000\t00000000\t0001\t0\t0\t0\tFFFFFF00\nens5\t00000000\t0100000A\t0003\t0\t0\t0\t00000000\n';
  t.equal(defaultRouteDevice((p) => (p === '/proc/net/route' ? route : '')), 'ens5');
  const v6 = `${'0'.repeat(32)} 00 ${'0'.repeat(32)} 00 fe800000000000000000000000000001 00000400 00000001 00000000 00000003 ens6\n`;
  t.equal(defaultRouteDevice((p) => (p === '/proc/net/route' ? 'Iface\n' : v6)), 'ens6', 'IPv6 when IPv4 has none');
  t.equal(defaultRouteDevice(() => { throw new Error('ENOENT'); }), undefined);
});
