/**
 * The policy repository: compiled rules indexed by their subject selector (so the rules of an
 * endpoint are found through the SelectorCache's identity -> selectors index, and rules that do
 * not select it cost nothing), a revision bumped on every change, and the identities each change
 * affects. CIDRs named by rules get CIDR identities from the allocator while the rules exist.
 */
import { Subject } from 'rxjs';
import type { Logger } from '../../hive/logger.js';
import type { Identity, IdentityAllocator, IdentityChange } from '../identity/types.js';
import { parseLabels, type Label } from '../../lib/labels.js';
import { compileRule } from './compile.js';
import { distill } from './distill.js';
import { invalidField } from './errors.js';
import { addTo, hasLabels, removeFrom, subjectIdentity } from './repository-helpers.js';
import { parsePolicyText } from './parse.js';
import { peerSelectors, type CompiledRule } from './rule.js';
import type { SelectorCache } from './selector-cache.js';
import type { Selector } from './selector.js';
import { tracePolicy } from './trace.js';
import type { CachedSelector, PolicyChange, PolicyRepository, PolicyRule, ResolvedPolicy, TraceResult, TraceSubject } from './types.js';

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

  constructor(
    private readonly cache: SelectorCache,
    private readonly allocator: IdentityAllocator,
    private readonly log?: Logger,
  ) {
    cache.onSelectionChange((keys, change) => this.onSelection(keys, change));
  }

  /** See PolicyRepository. */
  get revision(): number {
    return this.rev;
  }

  /** See PolicyRepository. */
  import(text: string): PolicyChange {
    const compiled = parsePolicyText(text).map((input, i) => compileRule(input, this.seq + i + 1));
    this.seq += compiled.length;
    const incoming = new Set(compiled.filter((r) => r.labels.length).map((r) => r.labels.join(';')));
    const replaced = [...this.rules.values()].filter((r) => r.labels.length && incoming.has(r.labels.join(';')));
    const affected = new Set<number>();
    for (const r of replaced) this.removeRule(r, affected);
    for (const r of compiled) this.addRule(r, affected);
    this.log?.info({ added: compiled.length, replaced: replaced.length, revision: this.rev + 1 }, 'policy imported');
    return this.commit(affected, { added: compiled.length, deleted: replaced.length });
  }

  /** See PolicyRepository. */
  delete(labels: readonly string[] | 'all'): PolicyChange {
    const victims = labels === 'all' ? [...this.rules.values()] : this.matching(labels, '/labels');
    if (victims.length === 0) return { revision: this.rev, affected: new Set(), rules: this.rules.size, deleted: 0 };
    const affected = new Set<number>();
    for (const r of victims) this.removeRule(r, affected);
    this.log?.info({ deleted: victims.length, revision: this.rev + 1 }, 'policy rules deleted');
    return this.commit(affected, { deleted: victims.length });
  }

  /** See PolicyRepository. */
  get(labels?: readonly string[]): PolicyRule[] {
    return (labels && labels.length ? this.matching(labels, '/labels') : [...this.rules.values()]).map((r) => r.raw);
  }

  /**
   * See PolicyRepository. Identities selected by the same rules share one distillation until the
   * rules or any selection change (endpoints of one workload regenerate once, not once each); the
   * result is shared, so callers must not change it.
   */
  resolve(identity: Identity): ResolvedPolicy {
    const rules = this.rulesFor(identity);
    const key = rules.map((r) => r.seq).join(',');
    let resolved = this.resolved.get(key);
    if (!resolved) {
      resolved = distill(rules, (sel) => this.identitiesOf(sel), this.rev);
      this.resolved.set(key, resolved);
    }
    return resolved;
  }

  /** See PolicyRepository. */
  trace(src: TraceSubject, dst: TraceSubject, dport: number, protocol: string): TraceResult {
    return tracePolicy((id) => this.rulesFor(id), this.traceSubject(src, 'src'), this.traceSubject(dst, 'dst'), dport, protocol, this.compiled());
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
    return [...this.rules.values()];
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
    return [...this.rules.values()].filter((r) => hasLabels(r, filter));
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
    return Promise.all(r.cidrs.map((c) => this.allocator.allocateCIDR(c).then(
      (i) => i.id,
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

  private commit(affected: Set<number>, counts: { added?: number; deleted?: number }): PolicyChange {
    this.resolved.clear();
    this.rev++;
    const change: PolicyChange = { revision: this.rev, affected, rules: this.rules.size, ...counts };
    this.subject.next(change);
    return change;
  }

  /** An identity appeared or went: the endpoints whose rules' peers changed must be regenerated. */
  private onSelection(keys: readonly string[], change: IdentityChange): void {
    if (keys.length) this.resolved.clear();
    const affected = new Set<number>();
    for (const key of keys) {
      if (this.bySubject.has(key)) affected.add(change.identity.id);
      for (const r of this.byPeer.get(key) ?? []) for (const id of this.cache.identitiesOf(r.subject.key)) affected.add(id);
    }
    if (affected.size) this.commit(affected, {});
  }

}
