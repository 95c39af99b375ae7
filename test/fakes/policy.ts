/**
 * The policy cell's fake, shared by every test that stands it in for the repository: rules kept as
 * imported (JSON arrays; anything else a PolicyError naming the field, as the real cell answers),
 * revisions, change events; `resolve` answers `entriesFor(identity)` and records who asked; `emit`
 * publishes a change as a policy import would.
 */
import { Subject } from 'rxjs';
import { PolicyError } from '../../src/cells/policy/errors.js';
import type { ImportOptions, PolicyBatchChange, PolicyChange, PolicyRepository, PolicyRule, ResolvedPolicy } from '../../src/cells/policy/types.js';
import type { Identity } from '../../src/cells/identity/types.js';
import type { PolicyEntry } from '../../src/datapath/types.js';

/** The fake repository. */
export class FakePolicyRepository implements PolicyRepository {
  rules: PolicyRule[] = [];
  revision = 1;
  readonly changes$ = new Subject<PolicyChange>();
  /** Identities resolve was asked for, in order. */
  readonly resolved: number[] = [];
  /** What resolve answers for an identity (default: allow all ingress). */
  entriesFor: (id: number) => PolicyEntry[] = () => [{ identity: 0, direction: 'ingress', protocol: 0, port: 0, deny: false }];
  /** What selectors() answers. */
  selectorCache = [{ selector: '&LabelSelector{MatchLabels:map[any.app:a]}', identities: [357], users: 1 }];

  import(text: string, opts: ImportOptions = {}): PolicyChange {
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch {
      throw new PolicyError('invalid', '', 'not JSON or YAML', 'send a rules array');
    }
    if (!Array.isArray(doc)) throw new PolicyError('invalid', '', 'expected an array of rules', 'send a rules array');
    doc.forEach((r, i) => {
      if (typeof r !== 'object' || r === null || !('endpointSelector' in r)) throw new PolicyError('invalid', `/${i}/endpointSelector`, 'is required', 'add an endpointSelector');
    });
    const incoming = doc as PolicyRule[];
    const keys = new Set(incoming.map((r) => (r.labels ?? []).join(';')));
    const replace = opts.replaceWithLabels ?? [];
    const replaced = (r: PolicyRule) => keys.has((r.labels ?? []).join(';')) || (replace.length > 0 && replace.every((l) => (r.labels ?? []).includes(l)));
    this.rules = [...this.rules.filter((r) => !replaced(r)), ...incoming];
    return this.bump(incoming.length, 0);
  }

  delete(labels: readonly string[] | 'all'): PolicyChange {
    const before = this.rules.length;
    this.rules = labels === 'all' ? [] : this.rules.filter((r) => !labels.every((l) => (r.labels ?? []).includes(l)));
    const deleted = before - this.rules.length;
    return deleted ? this.bump(0, deleted) : { revision: this.revision, affected: new Set(), rules: this.rules.length, deleted: 0 };
  }

  /** Each change in turn (the real one acts on the rules before the batch), one revision; all or nothing. */
  batch(changes: readonly PolicyBatchChange[]): PolicyChange {
    const [rules, revision] = [this.rules, this.revision];
    try {
      for (const c of changes) {
        if ('delete' in c) this.delete(c.delete);
        else this.import(c.import, c.replaceWithLabels ? { replaceWithLabels: c.replaceWithLabels } : {});
      }
    } catch (err) {
      [this.rules, this.revision] = [rules, revision];
      throw err;
    }
    if (this.revision === revision) return { revision, affected: new Set(), rules: this.rules.length, added: 0, deleted: 0 };
    this.revision = revision;
    return this.bump(Math.max(0, this.rules.length - rules.length), Math.max(0, rules.length - this.rules.length));
  }

  get(labels?: readonly string[]): PolicyRule[] {
    return labels?.length ? this.rules.filter((r) => labels.every((l) => (r.labels ?? []).includes(l))) : [...this.rules];
  }

  resolve(identity: Identity): ResolvedPolicy {
    this.resolved.push(identity.id);
    const entries = this.entriesFor(identity.id);
    return {
      revision: this.revision,
      ingressEnforced: !entries.some((e) => e.identity === 0 && e.direction === 'ingress' && !e.deny),
      egressEnforced: false,
      entries,
      allowedIngressIdentities: entries.filter((e) => e.direction === 'ingress' && !e.deny).map((e) => e.identity),
      allowedEgressIdentities: [],
      deniedIngressIdentities: entries.filter((e) => e.direction === 'ingress' && e.deny).map((e) => e.identity),
      deniedEgressIdentities: [],
    };
  }

  /** Publishes a change (a new revision) for `affected` identities. */
  emit(affected: ReadonlySet<number> | 'all'): void {
    this.revision++;
    this.changes$.next({ revision: this.revision, affected, rules: this.rules.length || 1 });
  }

  trace(src: { identity: number } | { labels: readonly string[] }) {
    if ('identity' in src && src.identity === 999) throw new PolicyError('not-found', '/src/identity', 'identity 999 is not known', 'give an allocated identity');
    const dir = { verdict: 'allowed' as const, enforced: this.rules.length > 0, rules: this.rules.map((r) => (r.labels ?? []).join(',')) };
    return { verdict: 'allowed' as const, ingress: dir, egress: dir, log: ['traced'] };
  }

  selectors() {
    return this.selectorCache;
  }

  private bump(added: number, deleted: number): PolicyChange {
    this.revision++;
    return { revision: this.revision, affected: 'all', rules: this.rules.length, added, deleted };
  }
}
