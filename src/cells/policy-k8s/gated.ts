/**
 * The policy objects of the three kinds behind the k8s cache-sync gate: until every watched
 * resource has synced (and each kind's replay reached its `sync`), events are only recorded (the
 * last per object), so the policy restored from the state directory stays exactly in force. Then
 * `flush` applies them as ONE repository change (one store write, one revision: no endpoint sees
 * part of it, and 500 objects cost one change, not 500): every added or updated object of every
 * kind, the deletes, and the prune of rules whose object is gone (deleted while the agent was
 * down). Should that change fail (a store write), they are applied one by one in the order that
 * never allows more than the old or the new state would: the upserts first, then the deletes,
 * then the prune. After the flush events apply as they come.
 */
import { PolicyError, PolicyStoreError, type PolicyRepository } from '../policy/index.js';
import type { Logger } from '../../hive/logger.js';
import type { PolicyKind, PolicyReconciler } from './reconcile.js';
import type { PolicyEvent } from './reconcile.js';

type Change = Exclude<PolicyEvent, { kind: 'sync' }>;

/** One kind: its reconciler and whether an object is in its (synced) cache. */
export interface GatedKind {
  readonly rec: PolicyReconciler;
  exists(key: string): boolean;
}

/** The gated policy sync (see the module comment). */
export class GatedPolicySync {
  private isOpen = false;
  private readonly pending = new Map<PolicyKind, Map<string, Change>>();
  private readonly replayedKinds = new Set<PolicyKind>();
  private markReplayed!: () => void;
  /** Settles once every kind's events reached their `sync`. */
  readonly replayed: Promise<void> = new Promise((r) => (this.markReplayed = r));

  constructor(
    private readonly kinds: ReadonlyMap<PolicyKind, GatedKind>,
    private readonly repo: PolicyRepository,
    private readonly log: Logger,
  ) {
    for (const k of kinds.keys()) this.pending.set(k, new Map());
    if (kinds.size === 0) this.markReplayed();
  }

  /** Whether events apply at once (after the flush). */
  get open(): boolean {
    return this.isOpen;
  }

  /** One event of `kind`'s resource: recorded before the flush, applied after it. */
  onEvent(kind: PolicyKind, ev: PolicyEvent): void {
    const k = this.kinds.get(kind);
    if (!k) return;
    if (this.isOpen) {
      if (ev.kind === 'sync') k.rec.prune((key) => k.exists(key));
      else if (ev.kind === 'delete') k.rec.remove(ev.key, ev.object);
      else k.rec.apply(ev.key, ev.object);
      return;
    }
    if (ev.kind !== 'sync') {
      this.pending.get(kind)!.set(ev.key, ev);
      return;
    }
    this.replayedKinds.add(kind);
    if (this.replayedKinds.size === this.kinds.size) this.markReplayed();
  }

  /** Applies what was recorded (see the module comment); returns how many changes of each sort. */
  flush(): { applied: number; deleted: number } {
    if (this.isOpen) return { applied: 0, deleted: 0 };
    this.isOpen = true;
    const upserts: { import: string; replaceWithLabels: string[] }[] = [];
    const deletes: { delete: string[] }[] = [];
    let [applied, deleted] = [0, 0];
    for (const [kind, changes] of this.pending) {
      const { rec } = this.kinds.get(kind)!;
      for (const ev of changes.values()) {
        if (ev.kind === 'delete') {
          deletes.push({ delete: rec.removal(ev.key, ev.object) });
          deleted++;
          continue;
        }
        const change = rec.prepare(ev.key, ev.object);
        if (change) upserts.push(change);
        applied++;
      }
    }
    for (const k of this.kinds.values()) for (const s of k.rec.stale((key) => k.exists(key))) deletes.push({ delete: s.labels });
    try {
      const change = this.repo.batch([...upserts, ...deletes]);
      this.log.info({ imports: upserts.length, deletes: deletes.length, revision: change.revision }, 'Kubernetes policy caches applied in one change');
    } catch (err) {
      if (!(err instanceof PolicyError || err instanceof PolicyStoreError)) throw err;
      this.log.warn({ err: err.message }, 'applying the Kubernetes policy caches in one change failed; applying them one by one');
      for (const u of upserts) this.repo.import(u.import, { replaceWithLabels: u.replaceWithLabels });
      for (const d of deletes) this.repo.delete(d.delete);
    }
    this.pending.clear();
    return { applied, deleted };
  }
}
