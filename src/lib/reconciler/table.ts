/**
 * A desired-state table in the manner of cilium/statedb: objects keyed by a string, each with a
 * reconciliation status (pending / done / error + message). Writers change the desired state; a
 * Reconciler writes it to the real target (the kernel) and records the outcome.
 */
import { Subject, type Observable } from 'rxjs';

/** Reconciliation state of one object. */
export type ObjectState = 'pending' | 'done' | 'error';

/** One desired object with its status. */
export interface DesiredObject<V> {
  readonly key: string;
  readonly value: V;
  state: ObjectState;
  message?: string;
  /** When the object last changed (ms since epoch). */
  updatedAt: number;
  /** Consecutive failed attempts (drives the retry backoff). */
  failures: number;
  /** Not before this time (ms since epoch) is the next retry due. */
  retryAt: number;
}

/** A change to the table: the key that changed. */
export interface TableChange {
  readonly key: string;
  readonly deleted: boolean;
}

/** Counts per state, for the status API. */
export interface TableStatus {
  readonly name: string;
  readonly objects: number;
  readonly pending: number;
  readonly done: number;
  readonly errors: number;
  /** Newest error messages (at most 5). */
  readonly lastErrors: readonly string[];
  readonly state: ObjectState;
  readonly updatedAt: string;
}

/** A desired-state table. */
export class DesiredTable<V> {
  private readonly objects = new Map<string, DesiredObject<V>>();
  /** Keys of the objects that are pending or failed (what a reconciler round looks at). */
  private readonly dirty = new Set<string>();
  /** Keys deleted from the desired state and not yet removed from the target. */
  private readonly tombstones = new Set<string>();
  private readonly subject = new Subject<TableChange>();
  /** Emits every change. */
  readonly changes$: Observable<TableChange> = this.subject.asObservable();
  private updatedAt = Date.now();

  constructor(
    readonly name: string,
    /** Whether two values are the same object for this table (the reconciler's write and prune compare with it). */
    readonly equal: (a: V, b: V) => boolean = (a, b) => JSON.stringify(a) === JSON.stringify(b),
  ) {}

  /** Sets the desired value; unchanged values keep their status. */
  upsert(key: string, value: V): void {
    const prev = this.objects.get(key);
    if (prev && this.equal(prev.value, value) && prev.state !== 'error') return;
    this.tombstones.delete(key);
    this.objects.set(key, { key, value, state: 'pending', updatedAt: Date.now(), failures: 0, retryAt: 0 });
    this.dirty.add(key);
    this.touch({ key, deleted: false });
  }

  /** Removes the desired value; the reconciler deletes it from the target. */
  delete(key: string): void {
    if (!this.objects.delete(key)) return;
    this.dirty.delete(key);
    this.tombstones.add(key);
    this.touch({ key, deleted: true });
  }

  /** The desired object of a key. */
  get(key: string): DesiredObject<V> | undefined {
    return this.objects.get(key);
  }

  /** How many objects are desired. */
  get size(): number {
    return this.objects.size;
  }

  /** Every desired object. */
  all(): DesiredObject<V>[] {
    return [...this.objects.values()];
  }

  /** Objects that need writing now (pending, or failed and due for retry). */
  due(at = Date.now()): DesiredObject<V>[] {
    const out: DesiredObject<V>[] = [];
    for (const key of this.dirty) {
      const o = this.objects.get(key)!;
      if (o.state === 'pending' || o.retryAt <= at) out.push(o);
    }
    return out;
  }

  /** Keys of the objects whose last write failed. */
  failing(): string[] {
    return [...this.dirty].filter((key) => this.objects.get(key)!.state === 'error');
  }

  /** When the earliest failed object is due for a retry (ms since epoch), or undefined when none failed. */
  nextRetryAt(): number | undefined {
    let next: number | undefined;
    for (const key of this.dirty) {
      const o = this.objects.get(key)!;
      if (o.state === 'error' && (next === undefined || o.retryAt < next)) next = o.retryAt;
    }
    return next;
  }

  /** Keys to delete from the target. */
  deletions(): string[] {
    return [...this.tombstones];
  }

  /** Marks a deletion done. */
  deleted(key: string): void {
    this.tombstones.delete(key);
  }

  /** Records a successful write (only when the value written is still the desired one). */
  markDone(key: string, written: V): void {
    const o = this.objects.get(key);
    if (!o || !this.equal(o.value, written)) return;
    o.state = 'done';
    o.message = undefined;
    o.failures = 0;
    o.updatedAt = this.updatedAt = Date.now();
    this.dirty.delete(key);
  }

  /** Records a failed write and when to retry. */
  markError(key: string, message: string, retryAt: number): void {
    const o = this.objects.get(key);
    if (!o) return;
    o.state = 'error';
    o.message = message;
    o.failures++;
    o.retryAt = retryAt;
    o.updatedAt = this.updatedAt = Date.now();
    this.dirty.add(key);
  }

  /** Marks an object pending again (the target drifted). */
  markPending(key: string): void {
    const o = this.objects.get(key);
    if (!o) return;
    o.state = 'pending';
    o.updatedAt = Date.now();
    this.dirty.add(key);
    this.touch({ key, deleted: false });
  }

  /**
   * Counts per state. Every object that is not done is in `dirty` (pending or failed), so this
   * looks at those only: the reconcilers report it after every round, and a pass over a table of
   * thousands of done objects per round made a burst of n changes O(n²).
   */
  status(): TableStatus {
    let pending = 0;
    const errs: DesiredObject<V>[] = [];
    for (const key of this.dirty) {
      const o = this.objects.get(key)!;
      if (o.state === 'pending') pending++;
      else if (o.state === 'error') errs.push(o);
    }
    const done = this.objects.size - pending - errs.length;
    pending += this.tombstones.size;
    const state: ObjectState = errs.length ? 'error' : pending ? 'pending' : 'done';
    return {
      name: this.name,
      objects: this.objects.size,
      pending,
      done,
      errors: errs.length,
      lastErrors: errs.slice(-5).map((o) => `${o.key}: ${o.message ?? 'failed'}`),
      state,
      updatedAt: new Date(this.updatedAt).toISOString(),
    };
  }

  private touch(c: TableChange): void {
    this.updatedAt = Date.now();
    this.subject.next(c);
  }
}
