/**
 * Distillation: the rules that select an endpoint -> its policy map state (datapath PolicyEntry).
 *
 * Semantics (Cilium's `default` enforcement): a direction no selecting rule enforces allows all
 * ({identity 0, protocol 0, port 0}); an enforced direction denies all but what is allowed; a deny
 * wins over any allow.
 *
 * The datapath looks up, per packet, the most specific entry for the peer identity and for
 * identity 0 (LPM over protocol, then port prefixes) and drops if either is a deny. Deny across
 * the two lookups needs nothing more. Within ONE identity, a deny only wins if it is at least as
 * specific as every allow it overlaps; so an allow overlapped by a deny of the same identity is
 * cut: the overlapping ports leave the allow (which may split in two or vanish), unless the allow
 * is a single LPM prefix strictly wider than the deny (then the deny is the longer match anyway).
 */
import type { Direction, PolicyEntry } from '../datapath/types.js';
import { contains, isPrefixBlock, rangeOf, subtract, type Range } from './ports.js';
import type { CompiledRule } from './rule.js';
import type { Selector } from './selector.js';
import type { ResolvedPolicy } from './types.js';

/** Identities a peer selector stands for; the wildcard stands for identity 0. */
export type PeerResolver = (sel: Selector) => Iterable<number>;

const DIRECTIONS: readonly Direction[] = ['ingress', 'egress'];

function entryKey(e: PolicyEntry): string {
  return `${e.direction}/${e.identity}/${e.protocol}/${e.port}-${e.endPort ?? e.port}`;
}

/** Adds an entry; the same key as deny and allow keeps the deny. */
function put(map: Map<string, PolicyEntry>, e: PolicyEntry): void {
  const k = entryKey(e);
  const have = map.get(k);
  if (!have || (e.deny && !have.deny)) map.set(k, e);
}

/** Computes the map state of an endpoint selected by `rules` (in evaluation order). */
export function distill(rules: readonly CompiledRule[], peers: PeerResolver, revision: number): ResolvedPolicy {
  const map = new Map<string, PolicyEntry>();
  const enforced = { ingress: false, egress: false };
  for (const r of rules) {
    if (r.defaultDeny.ingress) enforced.ingress = true;
    if (r.defaultDeny.egress) enforced.egress = true;
  }
  for (const d of DIRECTIONS) if (!enforced[d]) put(map, { identity: 0, direction: d, protocol: 0, port: 0, deny: false });
  for (const r of rules) {
    for (const s of r.sections) {
      const ports = s.ports.length ? s.ports : [{ protocol: 0, port: 0 }];
      for (const sel of s.peers) {
        for (const identity of peers(sel)) {
          for (const p of ports) put(map, { identity, direction: s.direction, protocol: p.protocol, port: p.port, ...(p.endPort !== undefined ? { endPort: p.endPort } : {}), deny: s.deny });
        }
      }
    }
  }
  const entries = resolveDenies([...map.values()]);
  const ids = (dir: Direction, deny: boolean) => [...new Set(entries.filter((e) => e.direction === dir && e.deny === deny).map((e) => e.identity))].sort((a, b) => a - b);
  return {
    revision,
    ingressEnforced: enforced.ingress,
    egressEnforced: enforced.egress,
    entries,
    allowedIngressIdentities: ids('ingress', false),
    allowedEgressIdentities: ids('egress', false),
    deniedIngressIdentities: ids('ingress', true),
    deniedEgressIdentities: ids('egress', true),
  };
}

/** Cuts allows overlapped by a deny of the same identity and direction (see the module comment). */
export function resolveDenies(entries: readonly PolicyEntry[]): PolicyEntry[] {
  const denies = new Map<string, PolicyEntry[]>();
  for (const e of entries) {
    if (!e.deny) continue;
    const g = `${e.direction}/${e.identity}`;
    const list = denies.get(g);
    if (list) list.push(e);
    else denies.set(g, [e]);
  }
  if (denies.size === 0) return [...entries];
  const out: PolicyEntry[] = [];
  for (const e of entries) {
    const ds = e.deny ? undefined : denies.get(`${e.direction}/${e.identity}`);
    if (!ds) {
      out.push(e);
      continue;
    }
    for (const r of cut(e, ds)) out.push(withRange(e, r));
  }
  return out;
}

/** The ranges of allow `a` left after the overlapping denies `ds`. */
function cut(a: PolicyEntry, ds: readonly PolicyEntry[]): Range[] {
  let pieces: Range[] = [rangeOf(a)];
  for (const d of ds) {
    if (d.protocol !== 0 && d.protocol !== a.protocol) continue; // other protocol, or more specific (a is any-protocol)
    if (d.protocol === 0 && a.protocol !== 0) return []; // an any-protocol deny is shorter: the allow must go
    const dr = rangeOf(d);
    pieces = pieces.flatMap((p) => (isPrefixBlock(p) && contains(p, dr) && (p[0] !== dr[0] || p[1] !== dr[1]) ? [p] : subtract(p, dr)));
    if (pieces.length === 0) return [];
  }
  return pieces;
}

function withRange(e: PolicyEntry, [lo, hi]: Range): PolicyEntry {
  const { endPort: _drop, ...rest } = e;
  if (lo === 0 && hi === 65535) return { ...rest, port: 0 };
  const start = Math.max(lo, 1); // port 0 means "every port" in an entry; a cut range starts at 1
  return hi > start ? { ...rest, port: start, endPort: hi } : { ...rest, port: start };
}
