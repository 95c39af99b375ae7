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
 *
 * A named port of an ingress section resolves to the endpoint's own port of that name and protocol
 * (its pod's container port); one of an egress section resolves per peer identity, to the numbers
 * the endpoints of that identity declare under the name (the node's named-port map; the wildcard
 * peer: any endpoint's). A name nobody declares drops out, and a section whose ports all drop out
 * allows (or denies) nothing for that peer: never every port. While the named-port map is not
 * complete (another node's endpoints not listed yet), an egress deny by name denies every port of
 * its protocol to the peers it selects: the name might stand for any number there.
 */
import type { Direction, PolicyEntry } from '../../datapath/types.js';
import { contains, isPrefixBlock, rangeOf, subtract, type Range } from './ports.js';
import type { CompiledRule, PortProto } from './rule.js';
import type { Selector } from './selector.js';
import type { NamedPort, ResolvedPolicy } from './types.js';

/** Identities a peer selector stands for; the wildcard stands for identity 0. */
export type PeerResolver = (sel: Selector) => Iterable<number>;

/** The numbers a named port stands for at a peer identity (0: at any endpoint); the named-port map's `ports`. */
export type EgressPortResolver = (name: string, protocol: number, identity: number) => readonly number[];

const NO_EGRESS_NAMES: EgressPortResolver = () => [];

const DIRECTIONS: readonly Direction[] = ['ingress', 'egress'];

const ANY_PORT: readonly PortProto[] = [{ protocol: 0, port: 0 }];
const portSigs = new WeakMap<readonly PortProto[], string>();

/** A section's ports as a string, so identical (peer, ports) pairs of different rules are expanded once. */
function portSig(ports: readonly PortProto[]): string {
  let sig = portSigs.get(ports);
  if (sig === undefined) portSigs.set(ports, (sig = ports.map((p) => `${p.protocol}/${p.port}-${p.endPort ?? ''}`).join(',')));
  return sig;
}

/** Adds entries keyed by direction/identity/protocol/port range; the same key as deny and allow keeps the deny. */
class EntryMap {
  readonly map = new Map<string, PolicyEntry>();

  put(identity: number, direction: Direction, p: PortProto, deny: boolean): void {
    const k = `${direction === 'ingress' ? 'i' : 'e'}${identity}/${p.protocol}/${p.port}-${p.endPort ?? ''}`;
    const have = this.map.get(k);
    if (have && (have.deny || !deny)) return;
    this.map.set(k, p.endPort !== undefined
      ? { identity, direction, protocol: p.protocol, port: p.port, endPort: p.endPort, deny }
      : { identity, direction, protocol: p.protocol, port: p.port, deny });
  }
}

/** `ports` with every named port replaced by the endpoint's number for it (dropped when it has none). */
export function resolveNamedPorts(ports: readonly PortProto[], named: readonly NamedPort[]): readonly PortProto[] {
  if (!ports.some((p) => p.name !== undefined)) return ports;
  return ports.flatMap((p) => (p.name === undefined ? [p] : named.filter((n) => n.name === p.name && n.protocol === p.protocol).map((n) => ({ protocol: p.protocol, port: n.port }))));
}

/** `ports` with every named port replaced by the numbers it stands for at peer `identity` (dropped when none). */
export function resolveEgressNamedPorts(ports: readonly PortProto[], identity: number, egressPorts: EgressPortResolver): PortProto[] {
  return ports.flatMap((p) => (p.name === undefined ? [p] : egressPorts(p.name, p.protocol, identity).map((port) => ({ protocol: p.protocol, port }))));
}

/** `ports` with every named port widened to every port of its protocol (a deny while the map is not complete). */
function widenNamedPorts(ports: readonly PortProto[]): PortProto[] {
  return ports.map((p) => (p.name === undefined ? p : { protocol: p.protocol, port: 0 }));
}

/**
 * Computes the map state of an endpoint selected by `rules` (in evaluation order), with its named
 * ports (ingress names) and the node's named-port map (egress names; `egressComplete` false while
 * it may miss endpoints: egress denies by name then deny every port of their protocol).
 */
export function distill(
  rules: readonly CompiledRule[], peers: PeerResolver, revision: number, namedPorts: readonly NamedPort[] = [],
  egressPorts: EgressPortResolver = NO_EGRESS_NAMES, egressComplete = true,
): ResolvedPolicy {
  const out = new EntryMap();
  const enforced = { ingress: false, egress: false };
  for (const r of rules) {
    if (r.defaultDeny.ingress) enforced.ingress = true;
    if (r.defaultDeny.egress) enforced.egress = true;
  }
  for (const d of DIRECTIONS) if (!enforced[d]) out.put(0, d, ANY_PORT[0]!, false);
  const expanded = new Set<string>();
  for (const r of rules) {
    for (const s of r.sections) {
      if (s.direction === 'egress' && s.ports.some((p) => p.name !== undefined)) {
        // the numbers depend on the peer: resolved per peer identity
        const widened = s.deny && !egressComplete ? widenNamedPorts(s.ports) : undefined;
        for (const sel of s.peers) {
          for (const identity of peers(sel)) for (const p of widened ?? resolveEgressNamedPorts(s.ports, identity, egressPorts)) out.put(identity, s.direction, p, s.deny);
        }
        continue;
      }
      const resolved = resolveNamedPorts(s.ports, namedPorts);
      if (s.ports.length && !resolved.length) continue; // only named ports, none declared: nothing
      const ports = resolved.length ? resolved : ANY_PORT;
      const sig = `${s.direction}|${s.deny}|${portSig(ports)}|`;
      for (const sel of s.peers) {
        const done = sig + sel.key;
        if (expanded.has(done)) continue;
        expanded.add(done);
        for (const identity of peers(sel)) for (const p of ports) out.put(identity, s.direction, p, s.deny);
      }
    }
  }
  const entries = resolveDenies([...out.map.values()]);
  const sets = { ingress: [new Set<number>(), new Set<number>()], egress: [new Set<number>(), new Set<number>()] };
  for (const e of entries) sets[e.direction][e.deny ? 1 : 0]!.add(e.identity);
  const sorted = (set: Set<number>) => [...set].sort((a, b) => a - b);
  return {
    revision,
    ingressEnforced: enforced.ingress,
    egressEnforced: enforced.egress,
    entries,
    allowedIngressIdentities: sorted(sets.ingress[0]!),
    allowedEgressIdentities: sorted(sets.egress[0]!),
    deniedIngressIdentities: sorted(sets.ingress[1]!),
    deniedEgressIdentities: sorted(sets.egress[1]!),
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
