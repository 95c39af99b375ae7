// Addresses no endpoint may hold (issue 11, inputs validated): PUT /endpoint with addressing set to
// an unspecified, loopback, link-local, multicast or broadcast address is refused with 400 naming the
// field, since the endpoint's program would let its pod send from that address and the ipcache
// would give it the pod's identity; an ordinary address passes.
import t from 'tap';
import { specFromChangeRequest } from '../../src/cells/endpoint/creator.js';
import type { EndpointChangeRequest } from '../../src/cells/endpoint/index.js';

const req = (addressing: Record<string, string>): EndpointChangeRequest =>
  ({ 'interface-name': 'lxc1', 'interface-index': 7, addressing, labels: ['k8s:app=web'], state: 'waiting-for-identity' }) as EndpointChangeRequest;

t.test('special-purpose addresses are refused, naming the field and the fix', async (t) => {
  const cases: Array<[string, 'ipv4' | 'ipv6', RegExp]> = [
    ['0.0.0.0', 'ipv4', /unspecified/],
    ['127.0.0.1', 'ipv4', /loopback/],
    ['127.1.2.3', 'ipv4', /loopback/],
    ['169.254.1.1', 'ipv4', /link-local/],
    ['224.0.0.1', 'ipv4', /multicast/],
    ['239.255.255.250', 'ipv4', /multicast/],
    ['255.255.255.255', 'ipv4', /broadcast/],
    ['::', 'ipv6', /unspecified/],
    ['::1', 'ipv6', /loopback/],
    ['fe80::1', 'ipv6', /link-local/],
    ['ff02::1', 'ipv6', /multicast/],
  ];
  for (const [ip, fam, why] of cases) {
    t.throws(() => specFromChangeRequest(req({ [fam]: ip })), { code: 'invalid', field: `/addressing/${fam}`, message: new RegExp(`${ip.replace(/[.]/g, '\\.')} cannot be an endpoint address: it is [^;]*${why.source}.*fix: use an address of the pod network`) }, `${ip} is refused`);
  }
  t.equal(specFromChangeRequest(req({ ipv4: '10.200.0.5', ipv6: 'fd12::5' })).ipv4, '10.200.0.5', 'ordinary addresses pass');
});
