import t from 'tap';
import { specialRange, whySpecial } from '../../src/lib/special-addr.js';

t.test('special-purpose ranges of both families', async (t) => {
  t.equal(specialRange('127.1.2.3')?.use, 'loopback');
  t.equal(specialRange('::1')?.use, 'loopback');
  t.equal(specialRange('0.0.0.0')?.use, 'unspecified');
  t.equal(specialRange('::')?.use, 'unspecified');
  t.equal(specialRange('169.254.20.10')?.use, 'link-local');
  t.equal(specialRange('fe80::1')?.use, 'link-local');
  t.equal(specialRange('239.1.1.1')?.use, 'multicast');
  t.equal(specialRange('ff02::1')?.use, 'multicast');
  t.equal(specialRange('255.255.255.255')?.use, 'reserved');
  for (const ip of ['10.96.0.10', '192.168.1.1', 'fd00::1', '2001:db8::1', 'not an address']) t.equal(specialRange(ip), undefined, `${ip}: none`);
});

t.test('whySpecial names the range unless its use is allowed', async (t) => {
  t.equal(whySpecial('127.0.0.1'), 'it is a loopback address (127.0.0.0/8)');
  t.equal(whySpecial('127.0.0.1', ['loopback']), undefined);
  t.equal(whySpecial('169.254.1.1', ['loopback']), 'it is a link-local address (169.254.0.0/16)');
  t.equal(whySpecial('10.0.0.1'), undefined);
});

t.test('range edges of both families', async (t) => {
  const cases: [string, string | undefined][] = [
    ['0.255.255.255', 'unspecified'], ['1.0.0.0', undefined], ['126.255.255.255', undefined], ['127.0.0.0', 'loopback'], ['128.0.0.0', undefined],
    ['169.253.255.255', undefined], ['169.254.0.0', 'link-local'], ['169.255.0.0', undefined], ['223.255.255.255', undefined], ['224.0.0.0', 'multicast'],
    ['239.255.255.255', 'multicast'], ['240.0.0.0', 'reserved'],
    ['::2', undefined], ['fe80::', 'link-local'], ['febf:ffff::1', 'link-local'], ['fec0::1', undefined], ['feff::1', undefined], ['ff00::', 'multicast'],
    ['::ffff:127.0.0.1', undefined], ['010.0.0.1', undefined],
  ];
  for (const [ip, use] of cases) t.equal(specialRange(ip)?.use, use, ip);
});
