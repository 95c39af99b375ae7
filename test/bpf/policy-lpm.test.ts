// Policy LPM expansion, key/value codecs and the in-memory trie (unprivileged).
import t from 'tap';
import { POLICY_KEY_SIZE, decodePolicyKey, decodePolicyValue, encodePolicyKey, encodePolicyValue, expandPolicy, policyKeyId, portRangeBlocks, type PolicyKey } from '../../src/maps/policy/key.js';
import { PolicyLpm } from '../../src/datapath/model/policy-lpm.js';
import type { PolicyEntry } from '../../src/datapath/types.js';

const entry = (over: Partial<PolicyEntry>): PolicyEntry => ({ identity: 0, direction: 'egress', protocol: 0, port: 0, deny: false, ...over });

t.test('port range blocks', async (t) => {
  t.strictSame(portRangeBlocks(80, 80), [{ port: 80, prefixLen: 64 }]);
  t.strictSame(portRangeBlocks(80, 83), [{ port: 80, prefixLen: 62 }]);
  t.strictSame(portRangeBlocks(1, 65535).length, 16, '1..65535 takes 16 blocks');
  t.strictSame(portRangeBlocks(8000, 8100), [
    { port: 8000, prefixLen: 58 }, { port: 8064, prefixLen: 59 },
    { port: 8096, prefixLen: 62 }, { port: 8100, prefixLen: 64 },
  ]);
  for (const [lo, hi] of [[1, 1000], [1024, 65535], [3, 17], [65535, 65535]] as const) {
    const covered: number[] = [];
    for (const b of portRangeBlocks(lo, hi)) {
      const size = 2 ** (64 - b.prefixLen);
      t.equal(b.port % size, 0, `block ${b.port}/${b.prefixLen} is aligned`);
      for (let p = b.port; p < b.port + size; p++) covered.push(p);
    }
    t.strictSame(covered, Array.from({ length: hi - lo + 1 }, (_, i) => lo + i), `${lo}..${hi} covered exactly once`);
  }
});

t.test('expansion: prefixes, merge (deny wins), validation', async (t) => {
  const out = expandPolicy([
    entry({ identity: 5 }),
    entry({ identity: 5, protocol: 6 }),
    entry({ identity: 5, protocol: 6, port: 443 }),
    entry({ identity: 5, protocol: 6, port: 443, deny: true }),
    entry({ identity: 5, direction: 'ingress', protocol: 17, port: 10, endPort: 11 }),
  ]);
  t.strictSame(out.map((e) => [policyKeyId(e.key), e.deny]), [
    ['e|5|0|0/40', false],
    ['e|5|6|0/48', false],
    ['e|5|6|443/64', true],
    ['i|5|17|10/63', false],
  ]);
  t.throws(() => expandPolicy([entry({ port: 80 })]), RangeError, 'a port needs a protocol');
  t.throws(() => expandPolicy([entry({ protocol: 6, port: 90, endPort: 80 })]), /endPort is below port/);
  t.throws(() => expandPolicy([entry({ protocol: 6, port: 0, endPort: 80 })]), /cannot start at 0/);
  t.throws(() => expandPolicy([entry({ protocol: 256 })]), /protocol must be/);
  t.throws(() => expandPolicy([entry({ identity: -1 })]), /identity must be/);
  t.throws(() => expandPolicy([entry({ protocol: 6, port: 70000 })]), /port must be/);
});

t.test('key and value codecs', async (t) => {
  const k: PolicyKey = { prefixLen: 64, egress: true, identity: 0x01020304, protocol: 6, dport: 8080 };
  const buf = encodePolicyKey(k);
  t.equal(buf.length, POLICY_KEY_SIZE);
  t.strictSame([...buf], [64, 0, 0, 0, 1, 4, 3, 2, 1, 6, 0x1f, 0x90], 'prefixlen LE, egress, identity LE, proto, dport BE');
  t.strictSame(decodePolicyKey(buf), k);
  const masked = encodePolicyKey({ ...k, prefixLen: 48 });
  t.strictSame([...masked.subarray(10)], [0, 0], 'bits beyond the prefix are cleared');
  const l3 = encodePolicyKey({ ...k, prefixLen: 40 });
  t.equal(l3[9], 0, 'an L3 key has no protocol');
  const at = Buffer.alloc(30);
  encodePolicyKey(k, at, 6);
  t.strictSame(decodePolicyKey(at, 6), k, 'encode/decode at an offset');
  t.strictSame([...encodePolicyValue(true)], [1, 0, 0, 0]);
  t.equal(decodePolicyValue(encodePolicyValue(false)), false);
  t.equal(decodePolicyValue(Buffer.from([1, 0, 0, 0])), true);
});

t.test('in-memory trie: longest prefix per lookup', async (t) => {
  const lpm = PolicyLpm.fromPolicy([
    entry({ identity: 5 }),
    entry({ identity: 5, protocol: 6, port: 80, deny: true }),
    entry({ identity: 5, protocol: 6, port: 8000, endPort: 8100 }),
    entry({ identity: 0, protocol: 17 }),
  ]);
  t.equal(lpm.size, 1 + 1 + 4 + 1);
  t.equal(lpm.lookup(true, 5, 6, 80)?.deny, true);
  t.equal(lpm.lookup(true, 5, 6, 81)?.key.prefixLen, 40, 'falls back to the L3 entry');
  t.equal(lpm.lookup(true, 5, 6, 8099)?.key.prefixLen, 62);
  t.equal(lpm.lookup(false, 5, 6, 80), undefined, 'direction is part of the key');
  t.equal(lpm.lookup(true, 6, 6, 80), undefined, 'identity is part of the key');
  t.equal(lpm.lookup(true, 0, 17, 1)?.key.prefixLen, 48);
  t.equal(new PolicyLpm().lookup(true, 0, 0, 0), undefined);
});
