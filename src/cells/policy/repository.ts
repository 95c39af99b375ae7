/**
 * The policy repository: compiled rules indexed by their subject selector (so the rules of an
 * endpoint are found through the SelectorCache's identity -> selectors index, and rules that do
 * not select it cost nothing), a revision bumped on every change, and the identities each change
 * affects. CIDRs named by rules get CIDR identities from the allocator while the rules exist.
 * With a PolicyStore, every import and delete is written to it before it takes effect (a failed
 * write changes nothing), and `restore` brings the stored rules, revision and CIDR identity numbers
 * back at start. Egress named ports resolve through the node's NamedPortMap: a change of a name
 * there is a change of every endpoint whose rules use the name on egress (a new revision).
 */
import { Subject } from 'rxjs';
import type { Logger } from '../../hive/logger.js';
import type { Identity, IdentityAllocator, IdentityChange } from '../identity/types.js';
import { parseLabels, type Label } from '../../lib/labels.js';
import { cidrLabel } from '../identity/index.js';
import { parseCidr } from '../../lib/addr.js';
import { compileRule } from './compile.js';
import { distill, type EgressPortResolver } from './distill.js';
import { invalidField } from './errors.js';
import { addTo, hasLabels, removeFrom, subjectIdentity } from './repository-helpers.js';
import { parsePolicyText } from './parse.js';
import { peerSelectors, type CompiledRule } from './rule.js';
import type { SelectorCache } from './selector-cache.js';
import type { Selector } from './selector.js';
import type { PolicyStore, StoredPolicy } from './store.js';
import { tracePolicy } from './trace.js';
import type { CachedSelector, ImportOptions, NamedPort, NamedPortMap, PolicyBatchChange, PolicyChange, PolicyRepository, PolicyRule, ResolvedPolicy, TraceOptions, TraceResult, TraceSubject } from './types.js';

const ZERO: readonly number[] = [0];

/** See the module comment. */
export class Repository implements PolicyRepository {
  private readonly rules = new Map<number, CompiledRule>();
  private readonly bySubject = new Map<string, Set<CompiledRule>>();
  private readonly byPeer = new Map<string, Set<CompiledRule>>();
  private readonly cidrIds = new Map<number, Promise<(number | undefined)[]>>();
  private readonly pending = new Set<Promise<unknown>>();
  private readonly subject = new Subject<PolicyChange>();
  /** See PolicyRepository. */
  readonly changes$ = this.subject.asObservable();
  private seq = 0;
  private rev = 1;
  /** Distillations by the sequence numbers of the selecting rules; emptied on every rule or selection change. */
  private readonly resolved = new Map<string, ResolvedPolicy>();
  /**
   * The selecting rules and their key by the subject selectors that select an identity (what
   * decides its rules): identities selected by the same subjects (every endpoint under a broad
   * rule set) find their rules in one lookup instead of a walk of each rule. Emptied with
   * `resolved`, and on every identity change (the selector cache then knows another identity).
   */
  private readonly bySubjects = new Map<string, SelectingRules>();
  /** While a change is being made: the identities its selection changes affect (they commit with it). */
  private mutation?: Set<number>;
  /** While restoring: the CIDR identity numbers to ask the allocator for. */
  private cidrHints?: Readonly<Record<string, number>>;

  constructor(
    private readonly cache: SelectorCache,
    private readonly allocator: IdentityAllocator,
    private readonly log?: Logger,
    private readonly store?: PolicyStore,
    /** The node's named ports (egress names); without one every egress name resolves to nothing. */
    private readonly namedPortMap?: NamedPortMap,
  ) {
    cache.onSelectionChange((keys, change) => this.onSelection(keys, change));
    this.egressPorts = namedPortMap ? (name, protocol, id) => namedPortMap.ports(name, protocol, id) : () => [];
    namedPortMap?.onChange((names) => this.onNamedPorts(names));
  }

  private readonly egressPorts: EgressPortResolver;

  /** See PolicyRepository. */
  get revision(): number {
    return this.rev;
  }

  /** See PolicyRepository. */
  import(text: string, opts: ImportOptions = {}): PolicyChange {
    const compiled = parsePolicyText(text).map((input, i) => compileRule(input, this.seq + i + 1));
    const incoming = new Set(compiled.filter((r) => r.labels.length).map((r) => r.labels.join(';')));
    const replaced = new Set([...this.rules.values()].filter((r) => r.labels.length && incoming.has(r.labels.join(';'))));
    if (opts.replaceWithLabels?.length) for (const r of this.matching(opts.replaceWithLabels, '/replaceWithLabels')) replaced.add(r);
    const change = this.transact([...replaced], compiled, { added: compiled.length, deleted: replaced.size });
    this.seq += compiled.length;
    this.log?.info({ added: compiled.length, replaced: replaced.size, revision: this.rev }, 'policy imported');
    return change;
  }

  /** See PolicyRepository. */
  delete(labels: readonly string[] | 'all'): PolicyChange {
    const victims = labels === 'all' ? [...this.rules.values()] : this.matching(labels, '/labels');
    if (victims.length === 0) return { revision: this.rev, affected: new Set(), rules: this.rules.size, deleted: 0 };
    const change = this.transact(victims, [], { deleted: victims.length });
    this.log?.info({ deleted: victims.length, revision: this.rev }, 'policy rules deleted');
    return change;
  }

  /** See PolicyRepository. */
  batch(changes: readonly PolicyBatchChange[]): PolicyChange {
    if (changes.length === 0) return { revision: this.rev, affected: new Set(), rules: this.rules.size, added: 0, deleted: 0 };
    // the rules with labels by their label set, once for the whole batch
    const byLabels = new Map<string, Set<CompiledRule>>();
    for (const r of this.rules.values()) if (r.labels.length) addTo(byLabels, r.labels.join(';'), r);
    const removed = new Set<CompiledRule>();
    const added: CompiledRule[] = [];
    let seq = this.seq;
    for (const c of changes) {
      if ('delete' in c) {
        for (const r of this.matching(c.delete, '/labels')) removed.add(r);
        continue;
      }
      const compiled = parsePolicyText(c.import).map((input, i) => compileRule(input, seq + i + 1));
      seq += compiled.length;
      for (const r of compiled) for (const old of (r.labels.length && byLabels.get(r.labels.join(';'))) || []) removed.add(old);
      if (c.replaceWithLabels?.length) for (const r of this.matching(c.replaceWithLabels, '/replaceWithLabels')) removed.add(r);
      added.push(...compiled);
    }
    const change = this.transact([...removed], added, { added: added.length, deleted: removed.size });
    this.seq = seq;
    this.log?.info({ changes: changes.length, added: added.length, deleted: removed.size, revision: this.rev }, 'policy changed in one batch');
    return change;
  }

  /**
   * Brings stored rules back (agent start, before any endpoint is regenerated): they are compiled
   * as bare rules (what `get` returns means the same), their CIDRs get the stored identity numbers
   * when free, and the revision is the stored one. Throws PolicyError naming the bad rule
   * (`/<index>/…`), changing nothing. Emits no change: no endpoint exists yet.
   */
  restore(stored: StoredPolicy): void {
    if (this.rules.size) throw new Error('restore() is for an empty repository (agent start)');
    const compiled = stored.rules.length ? parsePolicyText(JSON.stringify(stored.rules)).map((input, i) => compileRule(input, i + 1)) : [];
    this.mutation = new Set();
    this.cidrHints = stored.cidrIdentities;
    try {
      for (const r of compiled) this.addRule(r, this.mutation);
    } finally {
      this.mutation = undefined;
      this.cidrHints = undefined;
    }
    this.seq = compiled.length;
    this.rev = stored.revision;
    this.invalidate();
  }

  /** What the store holds for the repository as it is now, under `revision`. */
  snapshot(revision = this.rev): StoredPolicy {
    const cidrIdentities: Record<string, number> = {};
    for (const r of this.compiled()) {
      for (const c of r.cidrs) {
        const id = this.allocator.lookupByLabels(cidrIdentityLabels(c))?.id;
        if (id !== undefined) cidrIdentities[c] = id;
      }
    }
    return { revision, rules: this.get(), cidrIdentities };
  }

  /** See PolicyRepository. */
  get(labels?: readonly string[]): PolicyRule[] {
    return (labels && labels.length ? this.matching(labels, '/labels') : this.compiled()).map((r) => r.raw);
  }

  /**
   * See PolicyRepository. Identities selected by the same rules share one distillation until the
   * rules or any selection change (endpoints of one workload regenerate once, not once each), and,
   * when a rule names ports, the same named ports; the result is shared, so callers must not change it.
   */
  resolve(identity: Identity, namedPorts: readonly NamedPort[] = []): ResolvedPolicy {
    const sel = this.selectingRules(identity);
    const { rules, named } = sel;
    const key = sel.key + (named ? `|${namedPortsKey(namedPorts)}` : '');
    let resolved = this.resolved.get(key);
    if (!resolved) {
      resolved = distill(rules, (sel) => this.identitiesOf(sel), this.rev, named ? namedPorts : [], this.egressPorts, this.namedPortMap?.complete ?? true);
      this.resolved.set(key, resolved);
    }
    return resolved;
  }

  /** The rules selecting `identity` with their cache key: by its subject selectors when the selector cache knows it, else by matching. */
  private selectingRules(identity: Identity): SelectingRules {
    const known = this.cache.identity(identity.id);
    if (!known || (known !== identity && known.labels.join(';') !== identity.labels.join(';'))) return selectingRules(this.rulesFor(identity));
    let subjects = '';
    for (const key of this.cache.selectorsOf(identity.id)) if (this.bySubject.has(key)) subjects += `${key}\n`;
    let sel = this.bySubjects.get(subjects);
    if (!sel) this.bySubjects.set(subjects, (sel = selectingRules(this.rulesFor(identity))));
    return sel;
  }

  /** See PolicyRepository. */
  trace(src: TraceSubject, dst: TraceSubject, dport: number, protocol: string, opts: TraceOptions = {}): TraceResult {
    const s = this.traceSubject(src, 'src');
    const d = this.traceSubject(dst, 'dst');
    // candidates are compiled as if imported after every rule, and never added
    const extra = opts.candidates === undefined ? [] : parsePolicyText(opts.candidates).map((input, i) => compileRule(input, this.seq + i + 1));
    const rulesFor = extra.length ? (id: Identity) => [...this.rulesFor(id), ...extra.filter((r) => r.subject.matches(id))] : (id: Identity) => this.rulesFor(id);
    const own = opts.destinationPorts;
    const named = own && ((name: string, protocol: number, dir: 'ingress' | 'egress') => (dir === 'ingress'
      ? own.filter((p) => p.name === name && p.protocol === protocol).map((p) => p.port)
      : this.egressPorts(name, protocol, d.id)));
    return tracePolicy(rulesFor, s, d, dport, protocol, [...this.compiled(), ...extra], named);
  }

  /** See PolicyRepository. */
  selectors(): CachedSelector[] {
    return this.cache.list();
  }

  /** Resolves once every CIDR identity allocation or release started so far has finished. */
  async settled(): Promise<void> {
    while (this.pending.size) await Promise.allSettled([...this.pending]);
  }

  /** Every compiled rule, in insertion order. */
  compiled(): CompiledRule[] {
    return [...this.rules.values()].sort((a, b) => a.seq - b.seq);
  }

  /** The rules that select an identity, in insertion order. */
  rulesFor(identity: Identity): CompiledRule[] {
    const known = this.cache.identity(identity.id);
    const found: CompiledRule[] = [];
    if (known && known.labels.join(';') === identity.labels.join(';')) {
      for (const key of this.cache.selectorsOf(identity.id)) {
        const rs = this.bySubject.get(key);
        if (rs) found.push(...rs);
      }
    } else {
      for (const rs of this.bySubject.values()) {
        const first = rs.values().next().value as CompiledRule;
        if (first.subject.matches(identity)) found.push(...rs);
      }
    }
    return found.sort((a, b) => a.seq - b.seq);
  }

  /** Identities a selector stands for in the map state (the wildcard: identity 0). */
  identitiesOf(sel: Selector): Iterable<number> {
    return sel.kind === 'wildcard' ? ZERO : this.cache.identitiesOf(sel.key);
  }

  private traceSubject(s: TraceSubject, which: 'src' | 'dst'): Identity {
    return subjectIdentity(s, which, (id) => this.cache.identity(id) ?? this.allocator.lookup(id), (ls) => this.allocator.lookupByLabels(ls));
  }

  private matching(labels: readonly string[], pointer: string): CompiledRule[] {
    let filter: Label[];
    try {
      filter = parseLabels(labels);
    } catch (err) {
      throw invalidField(pointer, (err as Error).message, 'give labels as source:key=value');
    }
    return this.compiled().filter((r) => hasLabels(r, filter));
  }

  private addRule(r: CompiledRule, affected: Set<number>): void {
    this.rules.set(r.seq, r);
    this.cache.add(r.subject);
    addTo(this.bySubject, r.subject.key, r);
    for (const p of peerSelectors(r)) {
      if (p.kind === 'wildcard') continue;
      this.cache.add(p);
      addTo(this.byPeer, p.key, r);
    }
    for (const id of this.cache.identitiesOf(r.subject.key)) affected.add(id);
    if (r.cidrs.length) this.track(this.cidrIds.set(r.seq, this.allocateCIDRs(r)).get(r.seq)!);
  }

  private removeRule(r: CompiledRule, affected: Set<number>): void {
    for (const id of this.cache.identitiesOf(r.subject.key)) affected.add(id);
    this.rules.delete(r.seq);
    removeFrom(this.bySubject, r.subject.key, r);
    this.cache.remove(r.subject);
    for (const p of peerSelectors(r)) {
      if (p.kind === 'wildcard') continue;
      removeFrom(this.byPeer, p.key, r);
      this.cache.remove(p);
    }
    const ids = this.cidrIds.get(r.seq);
    if (ids) {
      this.cidrIds.delete(r.seq);
      this.track(ids.then((list) => Promise.all(list.map((id) => (id === undefined ? false : this.allocator.release(id))))));
    }
  }

  private allocateCIDRs(r: CompiledRule): Promise<(number | undefined)[]> {
    return Promise.all(r.cidrs.map((c) => this.allocator.allocateCIDR(c, { prefer: this.cidrHints?.[c] }).then(
      (i) => {
        this.store?.saveLater(() => this.snapshot());
        return i.id;
      },
      (err: unknown) => {
        this.log?.warn({ cidr: c, err: (err as Error).message }, 'CIDR identity allocation failed');
        return undefined;
      },
    )));
  }

  private track(p: Promise<unknown>): void {
    const done = p.then(() => undefined, () => undefined);
    this.pending.add(done);
    void done.then(() => this.pending.delete(done));
  }

  /**
   * Applies a change: removes and adds rules, writes the result to the store (when there is one)
   * and only then commits. A failed write undoes the change in memory and throws; nothing was
   * emitted, so no endpoint saw it.
   */
  private transact(removed: readonly CompiledRule[], added: readonly CompiledRule[], counts: { added?: number; deleted?: number }): PolicyChange {
    const affected = new Set<number>();
    this.mutation = affected;
    try {
      for (const r of removed) this.removeRule(r, affected);
      for (const r of added) this.addRule(r, affected);
      try {
        this.store?.save(this.snapshot(this.rev + 1));
      } catch (err) {
        for (const r of added) this.removeRule(r, new Set());
        for (const r of removed) this.addRule(r, new Set());
        this.invalidate();
        throw err;
      }
    } finally {
      this.mutation = undefined;
    }
    return this.commit(affected, counts);
  }

  /** Forgets every distillation and which rules select which identity. */
  private invalidate(): void {
    this.resolved.clear();
    this.bySubjects.clear();
  }

  private commit(affected: Set<number>, counts: { added?: number; deleted?: number }): PolicyChange {
    this.invalidate();
    this.rev++;
    const change: PolicyChange = { revision: this.rev, affected, rules: this.rules.size, ...counts };
    this.subject.next(change);
    return change;
  }

  /**
   * Names of the named-port map changed (or all of them: the map became complete): the endpoints
   * selected by rules that use one of them on egress must be regenerated (a new revision, like a
   * selection change); nothing else is.
   */
  private onNamedPorts(names: ReadonlySet<string> | 'all'): void {
    const affected = this.mutation ?? new Set<number>();
    let used = false;
    for (const r of this.rules.values()) {
      if (!r.egressPortNames.some((n) => names === 'all' || names.has(n))) continue;
      used = true;
      for (const id of this.cache.identitiesOf(r.subject.key)) affected.add(id);
    }
    if (!used) return;
    this.invalidate();
    if (this.mutation || affected.size === 0) return;
    this.commit(affected, {});
    this.store?.saveLater(() => this.snapshot());
  }

  /** An identity appeared or went: the endpoints whose rules' peers changed must be regenerated. */
  private onSelection(keys: readonly string[], change: IdentityChange): void {
    // whatever the selections, the cache knows another identity now: which subjects select which identity may differ
    this.bySubjects.clear();
    if (keys.length) this.resolved.clear();
    const affected = this.mutation ?? new Set<number>();
    for (const key of keys) {
      if (this.bySubject.has(key)) affected.add(change.identity.id);
      for (const r of this.byPeer.get(key) ?? []) for (const id of this.cache.identitiesOf(r.subject.key)) affected.add(id);
    }
    if (this.mutation || affected.size === 0) return;
    this.commit(affected, {});
    // the revision moved without a rule change: the store follows in the background
    this.store?.saveLater(() => this.snapshot());
  }
}

/** The rules selecting an identity, their sequence numbers as a cache key, and whether one names a port. */
interface SelectingRules {
  readonly key: string;
  readonly rules: CompiledRule[];
  readonly named: boolean;
}

function selectingRules(rules: CompiledRule[]): SelectingRules {
  return { key: rules.map((r) => r.seq).join(','), rules, named: rules.some((r) => r.namedPorts) };
}

/** Named ports as a cache key (order does not matter). */
function namedPortsKey(ports: readonly NamedPort[]): string {
  return ports.map((p) => `${p.name}/${p.protocol}=${p.port}`).sort().join(',');
}

/** The labels of the CIDR identity of `cidr` (as the identity allocator makes them). */
function cidrIdentityLabels(cidr: string): Label[] {
  return [cidrLabel(parseCidr(cidr)), { source: 'reserved', key: 'world', value: '' }];
}
