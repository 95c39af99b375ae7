/**
 * A local copy of every key under an etcd prefix, kept by list-then-watch (Cilium's kvstore
 * "ListAndWatch"): one range read at a revision, then a watch from the next revision. The etcd3
 * client resumes the watch itself after a broken connection; the copy is rebuilt by a full list
 * (emitting deletes for keys that vanished meanwhile) whenever it can no longer be trusted:
 *
 * - etcd cancels the watch (its revision was compacted away while the agent was cut off);
 * - the watch reconnects to a store whose revision is below the one the copy reflects (etcd was
 *   wiped or restored from a backup: a watch resumed there would wait, blind, for revisions the
 *   new store has not reached);
 * - `verify()`, run by the kvstore's probe, finds that etcd holds another number of keys under the
 *   prefix at the copy's revision than the copy (the watch missed changes), or that the revision is
 *   in the store's future;
 * - the kvstore finds the store replaced (its epoch key changed) and calls `resync()`.
 *
 * `revision` is the store revision the copy reflects exactly. Changes are emitted in order on `events$`.
 */
import type { Etcd3, Watcher } from 'etcd3';
import { Subject } from 'rxjs';
import type { Logger } from '../../hive/logger.js';
import { exponentialBackoff } from '../../lib/backoff.js';
import { unavailable } from './errors.js';
import type { KVStore, MirrorHandle, MirrorStatus } from './types.js';

/** Marks a reason of `verify()` that means the copy is wrong, not merely unverifiable. */
export const WRONG = 'wrong: ';

/** One change of a mirrored key (`key` without the prefix). */
export interface MirrorEvent {
  readonly kind: 'upsert' | 'delete';
  readonly key: string;
  readonly value: string;
}

/** The end of the key range of a prefix (the prefix with its last byte incremented). */
export function prefixEnd(prefix: string): Buffer {
  const b = Buffer.from(prefix);
  b[b.length - 1]++;
  return b;
}

/** The mirror of one prefix. */
export class PrefixMirror implements MirrorHandle {
  /** Key (without the prefix) -> value. */
  readonly entries = new Map<string, string>();
  private readonly subject = new Subject<MirrorEvent>();
  /** Every change, in etcd's order. */
  readonly events$ = this.subject.asObservable();
  private watcher?: Watcher;
  private stopped = false;
  private resyncing?: Promise<void>;
  private unregister?: () => void;
  /** How many full lists were done (1 after start). */
  lists = 0;
  /** The store revision the copy reflects (0 before the first list). */
  revision = 0;
  /** Bumped by every list, so a verification that raced one is discarded. */
  private generation = 0;
  private verifiedAt?: number;
  private changedAt?: number;
  private trouble?: string;
  private readonly etcd: Etcd3;

  /** `kv`: the kvstore (whose probe then verifies the mirror), or a bare client (no probe). */
  constructor(
    kv: Pick<KVStore, 'etcd'> & Partial<Pick<KVStore, 'addMirror'>>,
    readonly prefix: string,
    private readonly log: Logger,
  ) {
    this.etcd = kv.etcd;
    this.unregister = kv.addMirror?.(this);
  }

  /** Lists the prefix and starts watching it; rejects when etcd does not answer. */
  async start(): Promise<void> {
    await this.sync();
  }

  private async sync(): Promise<void> {
    const old = this.watcher;
    this.watcher = undefined;
    await old?.cancel().catch(() => undefined);
    let res;
    try {
      res = await this.etcd.getAll().prefix(this.prefix).exec();
    } catch (err) {
      throw unavailable(`listing ${this.prefix}`, err);
    }
    this.lists++;
    this.generation++;
    const seen = new Set<string>();
    for (const kv of res.kvs) {
      const key = kv.key.toString().slice(this.prefix.length);
      seen.add(key);
      this.apply('upsert', key, kv.value.toString());
    }
    for (const [key, value] of [...this.entries]) if (!seen.has(key)) this.apply('delete', key, value);
    this.revision = Number(res.header.revision);
    this.verifiedAt = Date.now();
    if (this.stopped) return;
    const w = await this.etcd.watch().prefix(this.prefix).startRevision(String(this.revision + 1)).create();
    if (this.stopped) {
      await w.cancel();
      return;
    }
    this.watcher = w;
    this.trouble = undefined;
    const at = (rev: unknown): void => {
      this.revision = Math.max(this.revision, Number(rev));
    };
    w.on('put', (kv) => {
      if (this.watcher !== w) return;
      this.apply('upsert', kv.key.toString().slice(this.prefix.length), kv.value.toString());
      at(kv.mod_revision);
    });
    w.on('delete', (kv) => {
      if (this.watcher !== w) return;
      this.apply('delete', kv.key.toString().slice(this.prefix.length), '');
      at(kv.mod_revision);
    });
    // a watch resumed on a store that went back in time waits, blind, for revisions it has not reached
    w.on('connected', (r) => {
      const now = Number(r.header?.revision ?? 0);
      if (this.watcher === w && now > 0 && now < this.revision) void this.resync(`the store went back in time: its revision is ${now}, the mirror had seen ${this.revision} (etcd wiped or restored)`, true);
    });
    w.on('error', (err) => {
      if (this.watcher === w) void this.resync(`etcd canceled the watch: ${err.message}`);
    });
  }

  /** Resolves once a resync in progress (if any) is done. */
  settled(): Promise<void> {
    return this.resyncing ?? Promise.resolve();
  }

  /**
   * See MirrorHandle: drops the watch and lists the prefix again (once at a time), until it
   * succeeds. `wrong`: the copy is known to differ from the store (not merely behind): if the first
   * list fails, its entries are dropped (emitted as deletes) rather than kept unverified — a stale
   * entry must not keep granting what the store no longer says (fail closed).
   */
  resync(reason: string, wrong = false): Promise<void> {
    if (this.stopped) return Promise.resolve();
    if (this.resyncing) return this.resyncing;
    this.trouble = reason;
    this.log.warn({ prefix: this.prefix, reason }, 'kvstore mirror cannot be trusted; listing the prefix again');
    const w = this.watcher;
    this.watcher = undefined;
    void w?.cancel().catch(() => undefined);
    this.resyncing = this.resyncLoop(wrong).finally(() => (this.resyncing = undefined));
    return this.resyncing;
  }

  private async resyncLoop(wrong: boolean): Promise<void> {
    for (let attempt = 0; !this.stopped; attempt++) {
      try {
        await this.sync();
        this.log.info({ prefix: this.prefix, keys: this.entries.size, revision: this.revision }, 'kvstore mirror listed again');
        return;
      } catch (err) {
        if (attempt === 0) {
          this.log.warn({ prefix: this.prefix, err: (err as Error).message, dropped: wrong ? this.entries.size : 0 }, wrong
            ? 'kvstore resync failed; the copy is known wrong, so its entries are dropped until the prefix can be listed'
            : 'kvstore resync failed; retrying');
          if (wrong) for (const [key, value] of [...this.entries]) this.apply('delete', key, value);
        }
        await new Promise((r) => setTimeout(r, exponentialBackoff(attempt, 200, 5000)));
      }
    }
  }

  /**
   * See MirrorHandle: counts the prefix's keys in etcd at the mirror's revision. Returns why the
   * copy is wrong (the caller resyncs), or undefined when it matches; rejects when etcd does not answer.
   */
  async verify(): Promise<string | undefined> {
    if (this.stopped || this.resyncing || !this.watcher) return undefined;
    const [rev, n, gen] = [this.revision, this.entries.size, this.generation];
    let count: number;
    try {
      const res = await this.etcd.kv.range({ key: Buffer.from(this.prefix), range_end: prefixEnd(this.prefix), revision: String(rev), count_only: true });
      count = Number(res.count);
    } catch (err) {
      const msg = (err as Error).message;
      if (/future revision/.test(msg)) return `${WRONG}the store went back in time: the mirror's revision ${rev} is in its future (etcd wiped or restored)`;
      if (/compacted/.test(msg)) return `revision ${rev} was compacted: the mirror cannot be checked against it`;
      throw unavailable(`checking the mirror of ${this.prefix}`, err);
    }
    if (gen !== this.generation) return undefined;
    if (count !== n) return `${WRONG}the watch missed changes: etcd has ${count} keys under the prefix at revision ${rev}, the mirror ${n}`;
    this.verifiedAt = Date.now();
    return undefined;
  }

  /** See MirrorHandle. */
  status(): MirrorStatus {
    return {
      prefix: this.prefix,
      revision: this.revision,
      keys: this.entries.size,
      state: this.lists === 0 && !this.resyncing ? 'starting' : this.resyncing || !this.watcher ? 'resyncing' : 'watching',
      ...(this.verifiedAt !== undefined ? { verifiedAt: this.verifiedAt } : {}),
      ...(this.changedAt !== undefined ? { changedAt: this.changedAt } : {}),
      ...(this.trouble ? { reason: this.trouble } : {}),
    };
  }

  private apply(kind: 'upsert' | 'delete', key: string, value: string): void {
    if (kind === 'upsert') {
      if (this.entries.get(key) === value) return;
      this.entries.set(key, value);
    } else {
      const had = this.entries.get(key);
      if (had === undefined) return;
      this.entries.delete(key);
      value = had;
    }
    this.changedAt = Date.now();
    this.subject.next({ kind, key, value });
  }

  /** Stops watching. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.unregister?.();
    const w = this.watcher;
    this.watcher = undefined;
    await w?.cancel().catch(() => undefined);
    await this.resyncing;
    this.subject.complete();
  }
}
