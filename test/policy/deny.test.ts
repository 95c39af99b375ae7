import t from 'tap';
import { Proto, type PolicyEntry } from '../../src/datapath/types.js';
import { resolveDenies } from '../../src/cells/policy/index.js';
import { policyHive, rules, lpmVerdict, refVerdict } from './helpers.js';

const entry = (identity: number, protocol: number, port: number, deny: boolean, endPort?: number): PolicyEntry =>
  ({ identity, direction: 'ingress', protocol, port, deny, ...(endPort ? { endPort } : {}) });

t.test('deny wins under the LPM lookup: same-identity allows covered by a broader deny are cut', async (t) => {
  // allow TCP/80 and deny any-protocol for the same identity: LPM alone would pick the allow
  t.same(resolveDenies([entry(7, Proto.TCP, 80, false), entry(7, 0, 0, true)]), [entry(7, 0, 0, true)]);
  // deny TCP 80-90 over allow TCP 85: the allow goes
  t.same(resolveDenies([entry(7, Proto.TCP, 85, false), entry(7, Proto.TCP, 80, true, 90)]), [entry(7, Proto.TCP, 80, true, 90)]);
  // allow TCP 80-100 minus deny 85-90 -> 80-84 and 91-100
  t.same(resolveDenies([entry(7, Proto.TCP, 80, false, 100), entry(7, Proto.TCP, 85, true, 90)]), [
    entry(7, Proto.TCP, 80, false, 84), entry(7, Proto.TCP, 91, false, 100), entry(7, Proto.TCP, 85, true, 90),
  ]);
  // a wider single-prefix allow keeps its shape: the narrower deny is the longer match
  t.same(resolveDenies([entry(7, Proto.TCP, 0, false), entry(7, Proto.TCP, 22, true)]), [entry(7, Proto.TCP, 0, false), entry(7, Proto.TCP, 22, true)]);
  t.same(resolveDenies([entry(7, 0, 0, false), entry(7, Proto.UDP, 0, true)]), [entry(7, 0, 0, false), entry(7, Proto.UDP, 0, true)]);
  // all TCP ports allowed, deny TCP on every port: gone
  t.same(resolveDenies([entry(7, Proto.TCP, 443, false), entry(7, Proto.TCP, 0, true)]), [entry(7, Proto.TCP, 0, true)]);
  // other identities are untouched: the datapath's second lookup (identity 0) handles them
  t.same(resolveDenies([entry(7, Proto.TCP, 80, false), entry(0, 0, 0, true)]), [entry(7, Proto.TCP, 80, false), entry(0, 0, 0, true)]);
  for (const [lo, hi] of [[0, 65535], [1, 1], [80, 100], [1024, 2047]]) {
    const left = resolveDenies([entry(7, Proto.TCP, 1, false, 65535), entry(7, Proto.TCP, lo === 0 ? 0 : lo, true, hi > lo ? hi : undefined)]);
    t.ok(left.every((e) => e.deny || e.port > 0), `cut ranges never start at port 0 (deny ${lo}-${hi})`);
  }
});

/** A small deterministic PRNG so the generated cases are reproducible. */
function prng(seed: number) {
  return () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
}

t.test('map state under the LPM lookup agrees with rule-by-rule evaluation (trace) on generated policies', async (t) => {
  const { repo, alloc } = await policyHive(t);
  const web = alloc.id('k8s:app=web');
  const peers = ['a', 'b', 'c'].map((n) => alloc.id(`k8s:app=${n}`, 'k8s:env=x'));
  const rnd = prng(42);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)]!;
  const peerField = () => pick([
    { fromEndpoints: [{ matchLabels: { app: pick(['a', 'b', 'c']) } }] },
    { fromEndpoints: [{ matchLabels: { env: 'x' } }] },
    { fromEntities: ['all'] },
    { fromEntities: ['cluster'] },
    {},
  ]);
  const ports = () => pick([
    undefined,
    [{ ports: [{ port: String(pick([80, 81, 443, 8080])), protocol: pick(['TCP', 'UDP', 'ANY']) }] }],
    [{ ports: [{ port: String(pick([64, 80, 90])), endPort: pick([95, 100, 127, 8080]), protocol: pick(['TCP', 'ANY']) }] }],
    [{ ports: [{ port: '0', protocol: pick(['TCP', 'UDP']) }] }],
  ]);
  const section = () => {
    const p = ports();
    const s: Record<string, unknown> = { ...peerField(), ...(p ? { toPorts: p } : {}) };
    return s;
  };
  let checked = 0;
  for (let round = 0; round < 60; round++) {
    repo.delete('all');
    const n = 1 + Math.floor(rnd() * 3);
    const rs = Array.from({ length: n }, () => ({
      endpointSelector: { matchLabels: { app: 'web' } },
      ...(rnd() < 0.8 ? { ingress: Array.from({ length: 1 + Math.floor(rnd() * 2) }, section) } : {}),
      ...(rnd() < 0.7 ? { ingressDeny: [section()] } : {}),
    }));
    repo.import(rules(...rs));
    const { entries } = repo.resolve(web);
    for (const peer of peers) {
      for (const [proto, pname] of [[Proto.TCP, 'TCP'], [Proto.UDP, 'UDP']] as const) {
        for (const port of [64, 79, 80, 81, 90, 95, 96, 100, 101, 443, 8080, 9000]) {
          const want = repo.trace({ identity: peer.id }, { identity: web.id }, port, pname).ingress.verdict;
          const got = lpmVerdict(entries, 'ingress', peer.id, proto, port);
          const ref = refVerdict(entries, 'ingress', peer.id, proto, port);
          if (got !== want || ref !== want) {
            t.fail(`round ${round} peer ${peer.labels[0]} ${pname}/${port}: map state says ${got} (reference ${ref}), rules say ${want}\n${JSON.stringify(rs)}\n${JSON.stringify(entries)}`);
            return;
          }
          checked++;
        }
      }
    }
  }
  t.equal(checked, 60 * 3 * 2 * 12, 'every generated packet agrees');
});
