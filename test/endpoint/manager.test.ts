import t from 'tap';
import { silentLogger } from '../../src/hive/index.js';
import { Endpoint } from '../../src/cells/endpoint/endpoint.js';
import { EndpointManagerImpl, type EndpointRuntime } from '../../src/cells/endpoint/manager.js';
import { EndpointIdAllocator, MAX_ENDPOINT_ID } from '../../src/cells/endpoint/id-allocator.js';
import { parseEndpointId } from '../../src/cells/endpoint/endpoint-id.js';
import type { EndpointSpec } from '../../src/cells/endpoint/spec.js';
import type { EndpointView } from '../../src/cells/endpoint/types.js';

function runtime(): EndpointRuntime & { cleaned: number[] } {
  const cleaned: number[] = [];
  return {
    cleaned,
    regenerate: async (ep) => {
      ep.builderSetState('ready', 'ok');
    },
    controllers: () => [],
    claimIPs: () => undefined,
    cleanup: async (ep) => {
      cleaned.push(ep.id);
    },
  };
}

function ep(n: number, extra: Partial<EndpointSpec> = {}): Endpoint {
  return new Endpoint({
    ifName: `lxc${n}`, ifIndex: 100 + n, mac: '02:00:00:00:00:01', hostMac: '02:00:00:00:00:02',
    ipv4: `10.200.${n >> 8}.${n & 255}`, ipv6: `fd00::${n.toString(16)}`, containerId: `c${n}`, containerIfName: 'eth0',
    podName: `pod${n}`, namespace: 'default', ...extra,
  }, ['k8s:app=x']);
}

t.test('id allocator: random, unique, full range, reserve and release', async (t) => {
  const a = new EndpointIdAllocator();
  const seen = new Set<number>();
  for (let i = 0; i < MAX_ENDPOINT_ID; i++) seen.add(a.allocate());
  t.equal(seen.size, MAX_ENDPOINT_ID, 'every ID handed out once');
  t.equal(Math.min(...seen), 1);
  t.equal(Math.max(...seen), 4095);
  t.throws(() => a.allocate(), { code: 'failed' });
  t.equal(a.release(17), true);
  t.equal(a.release(17), false);
  t.equal(a.allocate(), 17, 'the only free one');
  const b = new EndpointIdAllocator();
  t.equal(b.reserve(42), 42);
  t.throws(() => b.reserve(42), { code: 'exists', field: '/id' });
  t.throws(() => b.reserve(0), { code: 'invalid', field: '/id' });
  t.throws(() => b.reserve(4096), { code: 'invalid' });
  const firsts = new Set(Array.from({ length: 20 }, () => new EndpointIdAllocator().allocate()));
  t.ok(firsts.size > 1, 'first IDs differ between allocators (random)');
});

t.test('endpoint ids: prefixes, canonical IPs, errors', async (t) => {
  t.same(parseEndpointId('12'), { prefix: 'cilium-local', value: '12' });
  t.same(parseEndpointId('cilium-local:0012'), { prefix: 'cilium-local', value: '12' });
  t.same(parseEndpointId('ipv6:FD00:0::1'), { prefix: 'ipv6', value: 'fd00::1' });
  t.same(parseEndpointId('cni-attachment-id:abc:eth0'), { prefix: 'cni-attachment-id', value: 'abc:eth0' });
  t.throws(() => parseEndpointId('foo:1'), { code: 'invalid', message: /unknown endpoint ID prefix "foo"/ });
  t.throws(() => parseEndpointId('cilium-global:1'), { code: 'invalid', message: /unsupported/ });
  t.throws(() => parseEndpointId('abc'), { code: 'invalid', message: /invalid endpoint ID/ });
  t.throws(() => parseEndpointId('ipv4:fd00::1'), { code: 'invalid' });
  t.throws(() => parseEndpointId('pod-name:nopod'), { code: 'invalid', message: /namespace\/name/ });
  t.throws(() => parseEndpointId('container-id:'), { code: 'invalid', message: /empty/ });
});

t.test('addEndpoint: allocates, starts, indexes every way, emits created', async (t) => {
  const m = new EndpointManagerImpl(runtime(), silentLogger());
  const created: EndpointView[] = [];
  m.created$.subscribe((e) => created.push(e));
  const e1 = ep(1);
  await m.addEndpoint(e1);
  t.ok(e1.id >= 1 && e1.id <= 4095, 'ID in range');
  t.ok(e1.started);
  t.same(created, [e1]);
  for (const key of [String(e1.id), `cilium-local:${e1.id}`, 'ipv4:10.200.0.1', 'ipv6:fd00:0:0::1', 'container-id:c1', 'pod-name:default/pod1', 'cni-attachment-id:c1:eth0']) {
    t.equal(m.lookup(key), e1, `lookup ${key}`);
  }
  t.equal(m.lookup('ipv4:10.9.9.9'), undefined);
  await t.rejects(m.addEndpoint(e1), { code: 'failed', message: /already set/ }, 'refuses an endpoint whose ID is set');
  await t.rejects(m.addEndpoint({ id: 0 } as unknown as EndpointView), /not an endpoint created by the endpoint cell/);
});

t.test('conflicts name what clashed and leave nothing behind', async (t) => {
  const m = new EndpointManagerImpl(runtime(), silentLogger());
  await m.addEndpoint(ep(1, { requestedId: 77 }));
  t.equal(m.lookup('77')?.spec.ifName, 'lxc1', 'requested ID honoured');
  await t.rejects(m.addEndpoint(ep(2, { requestedId: 77 })), { code: 'exists', field: '/id' });
  await t.rejects(m.addEndpoint(ep(3, { containerId: 'c1' })), { code: 'exists', field: '/container-id' });
  await t.rejects(m.addEndpoint(ep(4, { ipv4: '10.200.0.1' })), { code: 'exists', field: '/addressing/ipv4' });
  await t.rejects(m.addEndpoint(ep(5, { ipv6: 'fd00::1' })), { code: 'exists', field: '/addressing/ipv6' });
  t.equal(m.size, 1);
  await m.addEndpoint(ep(6, { containerId: 'c1', containerIfName: 'eth1' }));
  t.equal(m.lookupContainer('c1').length, 2, 'two interfaces of one container');
});

t.test('IPAM refusing the addresses refuses the endpoint: nothing indexed, the ID freed, nothing emitted', async (t) => {
  const claimed: Array<[string, number]> = [];
  const rt = { ...runtime(), claimIPs: (e: Endpoint, id: number) => {
    if (e.ipv4 === '10.200.9.9') throw Object.assign(new Error('10.200.9.9 is the gateway address'), { code: 'invalid', field: '/addressing/ipv4' });
    claimed.push([e.spec.ifName, id]);
  } };
  const m = new EndpointManagerImpl(rt, silentLogger());
  const created: EndpointView[] = [];
  m.created$.subscribe((e) => created.push(e));
  await t.rejects(m.addEndpoint(ep(1, { requestedId: 42, ipv4: '10.200.9.9' })), { code: 'invalid', field: '/addressing/ipv4' });
  t.same([m.size, m.lookup('ipv4:10.200.9.9'), m.lookup('container-id:c1'), created.length], [0, undefined, undefined, 0]);
  const again = ep(2, { requestedId: 42 });
  await m.addEndpoint(again);
  t.equal(again.id, 42, 'the refused endpoint’s ID was freed');
  t.same(claimed, [['lxc2', 42]], 'the addresses are claimed under the endpoint’s ID before it starts');
});

t.test('removeEndpoint: tears down once, unindexes, frees the ID, emits deleted', async (t) => {
  const rt = runtime();
  const m = new EndpointManagerImpl(rt, silentLogger());
  const deleted: EndpointView[] = [];
  m.deleted$.subscribe((e) => deleted.push(e));
  const e1 = ep(1);
  await m.addEndpoint(e1);
  e1.setState('waiting-for-identity', 'creation');
  await Promise.all([m.removeEndpoint(e1, 'test'), m.removeEndpoint(e1, 'again')]);
  t.same(rt.cleaned, [e1.id], 'cleanup ran once');
  t.equal(e1.storedState, 'disconnected');
  t.same(deleted, [e1]);
  t.equal(m.lookup('ipv4:10.200.0.1'), undefined);
  t.equal(m.lookup('container-id:c1'), undefined);
  t.equal(m.size, 0);
  await t.rejects(m.removeEndpoint(e1, 'gone'), { code: 'not-found' });
  await m.addEndpoint(ep(1));
  t.equal(m.size, 1, 'the same IP and attachment can be used again');
});

t.test('regenerateAll reports failures after every endpoint settled', async (t) => {
  const rt = runtime();
  let fail = 0;
  rt.regenerate = async (e) => {
    if (e.spec.ifName === 'lxc2') { fail++; throw new Error('boom'); }
  };
  const m = new EndpointManagerImpl(rt, silentLogger());
  await m.addEndpoint(ep(1));
  await m.addEndpoint(ep(2));
  await t.rejects(m.regenerateAll('test'), { code: 'failed', message: /1 endpoint\(s\).*boom/ });
  t.equal(fail, 1);
  t.same(m.withIdentities('all').length, 2);
  t.same(m.withIdentities(new Set([5])).length, 0);
});
