// The hairpin loopback addresses (unprivileged): SERVICE_LOOPBACK (src/maps/lb/layout.ts) is what
// bpf/lib/common.h's LB_LOOPBACK_IPV4 and LB_LOOPBACK_IPV6_W0..W3 (host-order words) say.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { SERVICE_LOOPBACK } from '../../src/maps/index.js';
import { parseAddr } from '../../src/lib/addr.js';

const header = readFileSync(fileURLToPath(new URL('../../bpf/lib/common.h', import.meta.url)), 'utf8');

/** The value of `#define NAME 0x…` in common.h. */
function define(name: string): bigint {
  const m = new RegExp(`^#define ${name}\\s+(0x[0-9a-fA-F]+)`, 'm').exec(header);
  if (!m) throw new Error(`common.h has no #define ${name}`);
  return BigInt(m[1]!);
}

t.test('the IPv4 loopback address is LB_LOOPBACK_IPV4', async (t) => {
  t.equal(parseAddr(SERVICE_LOOPBACK.ipv4)?.value, define('LB_LOOPBACK_IPV4'));
  t.equal(SERVICE_LOOPBACK.ipv4, '169.254.42.1', "Cilium's --ipv4-service-loopback-address default");
});

t.test('the IPv6 loopback address is LB_LOOPBACK_IPV6_W0..W3', async (t) => {
  const words = [0, 1, 2, 3].map((i) => define(`LB_LOOPBACK_IPV6_W${i}`));
  const value = words.reduce((acc, w) => (acc << 32n) | w, 0n);
  t.equal(parseAddr(SERVICE_LOOPBACK.ipv6)?.value, value);
  t.equal(parseAddr(SERVICE_LOOPBACK.ipv6)?.family, 'ipv6');
});
