// The cni-server cell in a hive with the API server: the route on the socket (as the shim posts),
// the exit-code header, 503 before ready, the DEL queue replayed at start, netlink closed at stop.
import t from 'tap';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { testHive } from '../../src/hive/index.js';
import { apiServerCell, ApiServerToken } from '../../src/cells/api-server/index.js';
import { EndpointAPIManagerToken, EndpointManagerToken } from '../../src/cells/endpoint/index.js';
import { IPAMToken } from '../../src/cells/ipam/index.js';
import { cniServerCell, CniNetOpsToken, CniServerToken } from '../../src/cells/cni-server/index.js';
import { CNI_REQUEST_PATH, encodeCniRequest, sendCniRequest, type CniRequest } from '../../src/cni/protocol.js';
import { createSpecValidator } from '../../src/api/spec.js';
import { CONTROL_PLANE, cniReq, tempDir } from './helpers.js';
import { FakeNet } from './fake-net.js';

t.test('the route serves CNI commands on the agent socket; the DEL queue is replayed at start', async (t) => {
  const dir = tempDir(t, 'cell');
  const socketPath = join(dir, 'cellium.sock');
  const queue = join(dir, 'queue');
  mkdirSync(queue);
  writeFileSync(join(queue, '0000000000000000001-1-old.json'), encodeCniRequest(cniReq('DEL', { containerId: 'old', netns: '' })));
  const net = new FakeNet();
  net.addNetns('/run/netns/p1');
  const h = await testHive(t, [...CONTROL_PLANE, apiServerCell, cniServerCell], {
    config: { 'state-dir': join(dir, 'state'), 'socket-path': socketPath, 'cni-delete-queue-dir': queue, 'cni-mtu': 1450 },
    replace: [[CniNetOpsToken, net]],
  });
  const server = h.get(CniServerToken);
  await server.whenReady();
  t.same(readdirSync(queue), [], 'queued DEL replayed and removed');
  t.ok(h.get(ApiServerToken).served().includes('PostCelliumCni'));

  const add = await sendCniRequest(socketPath, cniReq('ADD'));
  t.equal(add.exitCode, 0, add.body);
  const res = JSON.parse(add.body) as { interfaces: Array<{ mtu?: number }>; ips: Array<{ address: string }> };
  t.equal(res.interfaces[1]!.mtu, 1450, '--cni-mtu');
  t.equal(h.get(EndpointManagerToken).lookup('cni-attachment-id:c1:eth0')?.state, 'ready');

  const bad = await sendCniRequest(socketPath, cniReq('ADD', { netns: '/run/netns/nope', containerId: 'c2' }));
  t.equal(bad.exitCode, 1);
  t.match(JSON.parse(bad.body), { code: 7, msg: /CNI_NETNS/ });

  const del = await sendCniRequest(socketPath, cniReq('DEL'));
  t.same(del, { exitCode: 0, body: '' });
  t.equal(h.get(IPAMToken).ownerOf(res.ips[0]!.address.split('/')[0]!), undefined);
  t.ok(h.get(EndpointAPIManagerToken));

  const spec = createSpecValidator();
  for (const call of [cniReq('ADD', { containerId: 'c3' }), cniReq('DEL', { containerId: 'c3' }), cniReq('CHECK', { containerId: 'zz' })]) {
    const raw = await post(socketPath, call);
    t.equal(raw.status, 200);
    t.same(spec.response('PostCelliumCni', 200, raw.body === '' ? undefined : JSON.parse(raw.body), raw.headers), [], `${call.command}: the answer matches api/openapi.yaml`);
  }
  server.setReady(false);
  const notReady = await post(socketPath, cniReq('ADD'));
  t.equal(notReady.status, 503, 'not ready: 503 (the shim then answers code 11, or queues a DEL)');
  t.same(spec.response('PostCelliumCni', 503, JSON.parse(notReady.body), notReady.headers), [], '503 matches the spec');
  server.setReady(true);
  await h.hive.stop();
  t.ok(net.closed, 'netlink handles closed at stop');
});

t.test('a DEL queue directory that cannot be listed is logged and the server still becomes ready', async (t) => {
  const dir = tempDir(t, 'cell');
  const socketPath = join(dir, 'cellium.sock');
  const notADir = join(dir, 'queue');
  writeFileSync(notADir, '');
  const h = await testHive(t, [...CONTROL_PLANE, apiServerCell, cniServerCell], {
    config: { 'state-dir': join(dir, 'state'), 'socket-path': socketPath, 'cni-delete-queue-dir': notADir },
    replace: [[CniNetOpsToken, new FakeNet()]],
  });
  await h.get(CniServerToken).whenReady();
  const status = await sendCniRequest(socketPath, cniReq('STATUS', { containerId: '', netns: '', ifName: '' }, {}, '1.1.0'));
  t.same(status, { exitCode: 0, body: '' }, 'STATUS succeeds');
});

/** Posts a request on the socket; resolves with the raw answer. */
function post(socketPath: string, call: CniRequest): Promise<{ status: number; headers: Record<string, string>; body: string }> {
  return new Promise((resolve, reject) => {
    const payload = encodeCniRequest(call);
    const r = request({ socketPath, path: CNI_REQUEST_PATH, method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers as Record<string, string>, body }));
    });
    r.on('error', reject);
    r.end(payload);
  });
}
