/** Test helpers for the policy cell: a mock IdentityAllocator, verdicts over the LPM policy map, a hive. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { statedirCell } from '../../src/cells/statedir/index.js';
import { testHive, type TestLike } from '../../src/hive/index.js';
import { policyCell, PolicyRepositoryToken, type Repository } from '../../src/cells/policy/index.js';
import { IdentityAllocatorToken } from '../../src/cells/identity/index.js';
import type { Direction, PolicyEntry } from '../../src/datapath/types.js';
import { PolicyLpm } from '../../src/datapath/model/policy-lpm.js';

/** The identity cell's fake standing in for it (src/cells/identity/fake.ts). */
export { FakeIdentityAllocator as MockAllocator } from '../../src/cells/identity/index.js';
import { FakeIdentityAllocator as MockAllocator } from '../../src/cells/identity/index.js';

/** A temporary state directory, removed when the test ends. */
export function tempStateDir(t: TestLike): string {
  const dir = mkdtempSync(join(tmpdir(), 'cellium-policy-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A started policy cell over a mock allocator, its store in `stateDir` (a fresh temporary one by default). */
export async function policyHive(t: TestLike, alloc = new MockAllocator(), stateDir = tempStateDir(t)) {
  const h = await testHive(t, [statedirCell, policyCell], { replace: [[IdentityAllocatorToken, alloc]], config: { 'state-dir': stateDir } });
  return { alloc, repo: h.get(PolicyRepositoryToken) as Repository, h, stateDir };
}

/** The LPM prefixes (start, length over 16 bits) of a port range, like the datapath expands them. */
export function portPrefixes(lo: number, hi: number): { start: number; len: number }[] {
  const out: { start: number; len: number }[] = [];
  let p = lo;
  while (p <= hi) {
    let size = 1;
    while (p % (size * 2) === 0 && p + size * 2 - 1 <= hi) size *= 2;
    out.push({ start: p, len: 16 - Math.log2(size) });
    p += size;
  }
  return out;
}

/** How specifically an entry matches proto/port (-1: no match), as the LPM trie ranks it. */
function specificity(e: PolicyEntry, proto: number, port: number): number {
  if (e.protocol === 0) return 0;
  if (e.protocol !== proto) return -1;
  if (e.port === 0) return 8;
  const hi = e.endPort && e.endPort > e.port ? e.endPort : e.port;
  const hit = portPrefixes(e.port, hi).find((p) => port >= p.start && port < p.start + 2 ** (16 - p.len));
  return hit ? 8 + hit.len : -1;
}

/** The most specific entry for one identity; throws when an allow and a deny tie (a map-state conflict). */
function lookup(entries: readonly PolicyEntry[], dir: Direction, identity: number, proto: number, port: number): PolicyEntry | undefined {
  let best: PolicyEntry | undefined;
  let bestLen = -1;
  let tie = false;
  for (const e of entries) {
    if (e.direction !== dir || e.identity !== identity) continue;
    const s = specificity(e, proto, port);
    if (s > bestLen) { best = e; bestLen = s; tie = false; } else if (s === bestLen && s >= 0 && e.deny !== best?.deny) tie = true;
  }
  if (tie) throw new Error(`two entries of identity ${identity} match ${proto}/${port} equally: the map state has a conflict`);
  return best;
}

/** The datapath's verdict through the datapath's own LPM table (src/datapath/model/policy-lpm.ts). */
export function lpmVerdict(entries: readonly PolicyEntry[], dir: Direction, peer: number, proto: number, port: number): 'allowed' | 'denied' {
  const lpm = PolicyLpm.fromPolicy(entries);
  const a = lpm.lookup(dir === 'egress', peer, proto, port);
  const b = lpm.lookup(dir === 'egress', 0, proto, port);
  if (a?.deny || b?.deny) return 'denied';
  return a || b ? 'allowed' : 'denied';
}

/** The same verdict from this file's reference evaluator, which also rejects allow/deny ties. */
export function refVerdict(entries: readonly PolicyEntry[], dir: Direction, peer: number, proto: number, port: number): 'allowed' | 'denied' {
  const a = lookup(entries, dir, peer, proto, port);
  const b = lookup(entries, dir, 0, proto, port);
  if (a?.deny || b?.deny) return 'denied';
  return a || b ? 'allowed' : 'denied';
}

/** A CiliumClusterwideNetworkPolicy-free bare rule list as JSON. */
export const rules = (...rs: object[]) => JSON.stringify(rs);
