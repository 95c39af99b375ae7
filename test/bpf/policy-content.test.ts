// The content id of a policy map state (src/maps/policy/content.ts): equal exactly when every
// lookup answers alike, whatever the order of the entries or how they were produced (an expansion,
// or entries read back from the kernel in its own order); any difference (a port, a deny flag, an
// identity, a direction) is another id. Endpoints with equal ids share one policy map.
import t from 'tap';
import { Proto, type PolicyEntry } from '../../src/datapath/types.js';
import { expandPolicy, policyContentId, type PolicyLpmEntry } from '../../src/maps/policy/index.js';

const base: PolicyEntry[] = [
  { identity: 1000, direction: 'ingress', protocol: Proto.TCP, port: 80, deny: false },
  { identity: 1001, direction: 'egress', protocol: 0, port: 0, deny: false },
  { identity: 0, direction: 'ingress', protocol: Proto.UDP, port: 8000, endPort: 8100, deny: true },
];

t.test('the same entries in another order, or produced another way, have the same id', async (t) => {
  const a = expandPolicy(base);
  const b = expandPolicy([...base].reverse());
  t.not(a, b, 'two arrays');
  t.equal(policyContentId(a), policyContentId(b), 'one id');
  const shuffled: PolicyLpmEntry[] = a.map((e) => ({ key: { ...e.key }, deny: e.deny })).reverse();
  t.equal(policyContentId(shuffled), policyContentId(a), 'entries as read back, in the kernel\'s order');
  t.match(policyContentId(a), /^[0-9a-f]{64}$/, 'a SHA-256 in hex');
  t.equal(policyContentId(expandPolicy([])), policyContentId([]), 'the empty policy');
});

t.test('any difference is another id', async (t) => {
  const id = policyContentId(expandPolicy(base));
  const variants: Array<[string, PolicyEntry[]]> = [
    ['another port (a named port standing for another number)', [{ ...base[0]!, port: 8080 }, base[1]!, base[2]!]],
    ['a deny instead of an allow', [{ ...base[0]!, deny: true }, base[1]!, base[2]!]],
    ['another peer identity', [{ ...base[0]!, identity: 1002 }, base[1]!, base[2]!]],
    ['the other direction', [{ ...base[0]!, direction: 'egress' }, base[1]!, base[2]!]],
    ['one entry more', [...base, { identity: 1003, direction: 'ingress', protocol: Proto.TCP, port: 443, deny: false }]],
    ['one entry less', base.slice(0, 2)],
  ];
  for (const [what, entries] of variants) t.not(policyContentId(expandPolicy(entries)), id, what);
});
