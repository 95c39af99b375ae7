/**
 * A local copy of every key under an etcd prefix, kept by list-then-watch (Cilium's kvstore
 * "ListAndWatch"): one range read at a revision, then a watch from the next revision. The etcd3
 * client resumes the watch itself after a broken connection; when etcd cancels it (the revision was
 * compacted away while the agent was cut off) the copy is rebuilt by a full list, emitting deletes
 * for keys that vanished meanwhile. Changes are emitted in order on `events$`.
 */
import type { Etcd3, Watcher } from 'etcd3';
import { Subject } from 'rxjs';
import type { Logger } from '../../hive/logger.js';
import { exponentialBackoff } from '../../lib/backoff.js';
import { unavailable } from './errors.js';

/** One change of a mirrored key (`key` without the prefix). */
export interface MirrorEvent {
  readonly kind: 'upsert' | 'delete';
  readonly key: string;
  readonly value: string;
}

/** The mirror of one prefix. */
export class PrefixMirror {
  /** Key (without the prefix) -> value. */
  readonly entries = new Map<string, string>();
  private readonly subject = new Subject<MirrorEvent>();
  /** Every change, in etcd's order. */
  readonly events$ = this.subject.asObservable();
  private watcher?: Watcher;
  private stopped = false;
  private resyncing?: Promise<void>;
  /** How many full lists were done (1 after start). */
  lists = 0;

  constructor(
    private readonly etcd: Etcd3,
    readonly prefix: string,
    private readonly log: Logger,
  ) {}

  /** Lists the prefix and starts watching it; rejects when etcd does not answer. */
  async start(): Promise<void> {
    await this.sync();
  }

  private async sync(): Promise<void> {
    let res;
    try {
      res = await this.etcd.getAll().prefix(this.prefix).exec();
    } catch (err) {
      throw unavailable(`listing ${this.prefix}`, err);
    }
    this.lists++;
    const seen = new Set<string>();
    for (const kv of res.kvs) {
      const key = kv.key.toString().slice(this.prefix.length);
      seen.add(key);
      this.apply('upsert', key, kv.value.toString());
    }
    for (const [key, value] of [...this.entries]) if (!seen.has(key)) this.apply('delete', key, value);
    if (this.stopped) return;
    const w = await this.etcd.watch().prefix(this.prefix).startRevision(String(Number(res.header.revision) + 1)).create();
    if (this.stopped) {
      await w.cancel();
      return;
    }
    this.watcher = w;
    w.on('put', (kv) => this.apply('upsert', kv.key.toString().slice(this.prefix.length), kv.value.toString()));
    w.on('delete', (kv) => this.apply('delete', kv.key.toString().slice(this.prefix.length), ''));
    w.on('error', (err) => {
      if (this.watcher !== w) return;
      this.log.warn({ prefix: this.prefix, err: err.message }, 'kvstore watch canceled; listing the prefix again');
      this.watcher = undefined;
      void w.cancel().catch(() => undefined);
      this.resyncing ??= this.resyncLoop().finally(() => (this.resyncing = undefined));
    });
  }

  private async resyncLoop(): Promise<void> {
    for (let attempt = 0; !this.stopped; attempt++) {
      try {
        await this.sync();
        return;
      } catch (err) {
        if (attempt === 0) this.log.warn({ prefix: this.prefix, err: (err as Error).message }, 'kvstore resync failed; retrying');
        await new Promise((r) => setTimeout(r, exponentialBackoff(attempt, 200, 5000)));
      }
    }
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
    this.subject.next({ kind, key, value });
  }

  /** Stops watching. */
  async stop(): Promise<void> {
    this.stopped = true;
    const w = this.watcher;
    this.watcher = undefined;
    await w?.cancel().catch(() => undefined);
    await this.resyncing;
    this.subject.complete();
  }
}
