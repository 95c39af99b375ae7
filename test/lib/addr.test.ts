import t from 'tap';
import { isIPv4 } from 'node:net';
import { canonicalAddr, formatAddr, parseAddr, parseIPv4 } from '../../src/lib/addr.js';
import { flat } from '../../src/lib/flat-string.js';

t.test('parseIPv4 accepts exactly what node:net isIPv4 accepts', async (t) => {
  const cases = [
    '0.0.0.0', '255.255.255.255', '10.96.0.10', '1.2.3.4', '192.168.100.200',
    '', '1.2.3', '1.2.3.4.5', '01.2.3.4', '1.02.3.4', '1.2.3.00', '256.1.1.1', '1.1.1.256', '1..1.1', '.1.1.1', '1.1.1.',
    ' 1.1.1.1', '1.1.1.1 ', '1.1.1.1/32', '1.1.1.a', '::1', '::ffff:1.2.3.4', '1.1.1.1\n', '-1.1.1.1', '+1.1.1.1', '1e1.1.1.1', '999.999.999.999',
    '100.100.100.1000', '0x1.1.1.1', '1.1.1.1.', '１.1.1.1',
  ];
  for (const s of cases) t.equal(parseIPv4(s) !== undefined, isIPv4(s), JSON.stringify(s));
  // random texts from the characters of an address
  let seed = 7;
  const rnd = (n: number): number => ((seed = (seed * 1103515245 + 12345) % 2147483648) % n);
  let disagree = 0;
  for (let i = 0; i < 20000; i++) {
    let s = '';
    const len = 1 + rnd(16);
    for (let j = 0; j < len; j++) s += '0123456789..'[rnd(12)];
    if ((parseIPv4(s) !== undefined) !== isIPv4(s)) disagree++;
  }
  t.equal(disagree, 0, 'no random text on which the two disagree');
});

t.test('parseIPv4 gives the address as a number; parseAddr and canonicalAddr agree with it', async (t) => {
  t.equal(parseIPv4('10.96.0.10'), 0x0a60000a);
  t.equal(parseIPv4('255.255.255.255'), 4294967295);
  t.same(parseAddr('10.96.0.10'), { family: 'ipv4', value: 0x0a60000an });
  t.equal(formatAddr('ipv4', parseAddr('192.168.1.20')!.value), '192.168.1.20');
  t.equal(canonicalAddr('10.0.0.1'), '10.0.0.1');
  t.equal(canonicalAddr('010.0.0.1'), undefined, 'leading zeros are no address');
  t.equal(canonicalAddr('fd00:0:0::1'), 'fd00::1');
  t.equal(canonicalAddr('::ffff:1.2.3.4'), '::ffff:102:304');
  t.equal(canonicalAddr('nope'), undefined);
});

t.test('flat returns the same text', async (t) => {
  const parts = ['10.200.', String(12), '.', String(34), ':8080/TCP'];
  const s = `${parts[0]}${parts[1]}${parts[2]}${parts[3]}${parts[4]}`;
  t.equal(flat(s), '10.200.12.34:8080/TCP');
  t.equal(flat(''), '');
});
