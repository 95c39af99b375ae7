/**
 * Resource<T>: a cached, watched view of one kind of Kubernetes object, shaped like Cilium's
 * pkg/k8s/resource. A reflector lists (a consistent snapshot and its resourceVersion), then watches
 * from that resourceVersion with bookmarks; a watch that ends is resumed from the last version
 * seen, "410 Gone" (the version is older than the apiserver keeps) relists, and any other failure
 * relists after an exponential backoff. A relist compares the new snapshot with the cache, so an
 * object deleted while no watch ran still gives a delete event: nothing is ever left behind.
 * Subscribers of `events()` get every cached object as an upsert, a `sync` once the first list is
 * in, then every change.
 */
import { Observable, Subject } from 'rxjs';
import { watchFailed } from './errors.js';
import { Sleeper } from './sleeper.js';

/** The part of a Kubernetes object a Resource reads. */
export interface K8sObject {
  readonly metadata?: {
    readonly name?: string;
    readonly namespace?: string;
    readonly resourceVersion?: string;
  };
}

/** A change of the cache, or `sync`: the cache holds a complete list (sent once per subscriber). */
export type ResourceEvent<T> =
  | { readonly kind: 'upsert'; readonly key: string; readonly object: T }
  | { readonly kind: 'delete'; readonly key: string; readonly object: T }
  | { readonly kind: 'sync' };

/** One event of a watch, as the apiserver sends it. */
export type WatchEvent<T> =
  | { readonly type: 'ADDED' | 'MODIFIED' | 'DELETED'; readonly object: T }
  | { readonly type: 'BOOKMARK'; readonly resourceVersion: string }
  | { readonly type: 'ERROR'; readonly status: { readonly code?: number; readonly reason?: string; readonly message?: string } };

/** A running watch: `done` resolves when the server ends it, rejects when it fails. */
export interface WatchHandle {
  readonly done: Promise<void>;
  stop(): void;
}

/** Where a Resource gets its objects: the apiserver (listwatch.ts), or a fake in unit tests. */
export interface ListWatcher<T> {
  /** A consistent list and the resourceVersion it is at; `signal` aborts it (stop). */
  list(signal?: AbortSignal): Promise<{ readonly items: readonly T[]; readonly resourceVersion: string }>;
  /** Watches changes after `resourceVersion`, with bookmarks; `onEvent` gets them in order. */
  watch(resourceVersion: string, onEvent: (ev: WatchEvent<T>) => void): Promise<WatchHandle>;
}

/** A read-only view of the cache. */
export interface Store<T> {
  /** The object with this key ("namespace/name", or "name" for cluster-scoped objects). */
  get(key: string): T | undefined;
  /** Every cached object. */
  list(): T[];
  readonly size: number;
}

/** Backoff and reporting of a Resource. */
export interface ResourceOptions {
  /** First retry delay after a failure (ms, default 200); doubles per failure. */
  readonly minBackoffMs?: number;
  /** Longest retry delay (ms, default 30000). */
  readonly maxBackoffMs?: number;
  /** Told about every failure the reflector retries (log it, count it). */
  readonly onError?: (err: Error) => void;
}

/** The cache key of an object: "namespace/name", or "name" when it has no namespace. */
export function keyOf(o: K8sObject): string {
  const name = o.metadata?.name ?? '';
  return o.metadata?.namespace ? `${o.metadata.namespace}/${name}` : name;
}

/** A watched, cached kind of object; `start()` runs its reflector until `stop()`. */
export class Resource<T extends K8sObject> {
  private readonly cache = new Map<string, T>();
  private readonly changes = new Subject<ResourceEvent<T>>();
  private isSynced = false;
  private markSynced!: () => void;
  private running?: Promise<void>;
  private stopped = false;
  private readonly abort = new AbortController();
  private watch?: WatchHandle;
  private readonly sleeper = new Sleeper();
  private stats = { lists: 0, watches: 0, failures: 0 };
  private last?: Error;
  /** Resolves once the first list is in the cache. */
  readonly synced: Promise<void>;

  constructor(
    /** What it watches, for errors and status ("namespaces", "pods in kube-system"). */
    readonly name: string,
    private readonly lw: ListWatcher<T>,
    private readonly opts: ResourceOptions = {},
  ) {
    this.synced = new Promise((resolve) => (this.markSynced = resolve));
  }

  /** Starts the reflector (list, then watch); a second call does nothing. */
  start(): void {
    this.running ??= this.reflect();
  }

  /** Stops the reflector and completes every `events()` stream. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.abort.abort();
    this.watch?.stop();
    this.sleeper.interrupt();
    await this.running;
    this.changes.complete();
  }

  /** The cache once synced. */
  async store(): Promise<Store<T>> {
    await this.synced;
    const cache = this.cache;
    return {
      get: (key) => cache.get(key),
      list: () => [...cache.values()],
      get size() {
        return cache.size;
      },
    };
  }

  /** The cached object with this key now (also before sync: absent may mean not listed yet). */
  get(key: string): T | undefined {
    return this.cache.get(key);
  }

  /** Every cached object as an upsert, `sync` once synced, then every change, until stop. */
  events(): Observable<ResourceEvent<T>> {
    return new Observable<ResourceEvent<T>>((sub) => {
      for (const [key, object] of this.cache) sub.next({ kind: 'upsert', key, object });
      if (this.isSynced) sub.next({ kind: 'sync' });
      // Subscribed in the same turn as the replay: no change falls between them.
      // not a job: the implementation of this Observable (its subscriber's subscription)
      return this.changes.subscribe(sub);
    });
  }

  /** Counters and the last failure, for status output and tests. */
  status(): { synced: boolean; objects: number; lists: number; watches: number; failures: number; lastError?: string } {
    return { synced: this.isSynced, objects: this.cache.size, ...this.stats, ...(this.last ? { lastError: this.last.message } : {}) };
  }

  private async reflect(): Promise<void> {
    let failures = 0;
    while (!this.stopped) {
      try {
        let rv = await this.relist();
        failures = 0;
        // Watch until the version is gone (relist) or a watch fails (backoff, relist).
        while (!this.stopped) {
          const started = Date.now();
          const r = await this.watchFrom(rv);
          if (r.gone) break;
          // A watch the server closed at once, without news, is retried after a pause.
          if (r.rv !== rv) failures = 0;
          else if (Date.now() - started < 1000) await this.sleep(this.backoff(failures++));
          rv = r.rv;
        }
      } catch (err) {
        if (this.stopped) break;
        this.stats.failures++;
        this.last = err instanceof Error ? err : new Error(String(err));
        this.opts.onError?.(this.last);
        await this.sleep(this.backoff(failures++));
      }
    }
  }

  /** Lists, replaces the cache (upserts for new and changed, deletes for vanished), marks synced. */
  private async relist(): Promise<string> {
    const { items, resourceVersion } = await this.lw.list(this.abort.signal);
    this.stats.lists++;
    if (this.stopped) return resourceVersion;
    const seen = new Set<string>();
    for (const object of items) {
      const key = keyOf(object);
      seen.add(key);
      const old = this.cache.get(key);
      this.cache.set(key, object);
      if (!old || old.metadata?.resourceVersion !== object.metadata?.resourceVersion) this.changes.next({ kind: 'upsert', key, object });
    }
    for (const [key, object] of this.cache) {
      if (seen.has(key)) continue;
      this.cache.delete(key);
      this.changes.next({ kind: 'delete', key, object });
    }
    if (!this.isSynced) {
      this.isSynced = true;
      this.markSynced();
      this.changes.next({ kind: 'sync' });
    }
    return resourceVersion;
  }

  /** One watch from `rv`: the last version seen, and whether the server said it is gone (410). */
  private async watchFrom(rv: string): Promise<{ rv: string; gone: boolean }> {
    let last = rv;
    let gone = false;
    let failure: Error | undefined;
    const handle = await this.lw.watch(rv, (ev) => {
      if (gone || failure || this.stopped) return;
      switch (ev.type) {
        case 'BOOKMARK':
          last = ev.resourceVersion || last;
          return;
        case 'ERROR':
          if (ev.status.code === 410) gone = true;
          else failure = watchFailed(this.name, `${ev.status.code ?? '?'} ${ev.status.reason ?? ''} ${ev.status.message ?? ''}`.trim());
          this.watch?.stop();
          return;
        case 'DELETED': {
          const key = keyOf(ev.object);
          this.cache.delete(key);
          last = ev.object.metadata?.resourceVersion ?? last;
          this.changes.next({ kind: 'delete', key, object: ev.object });
          return;
        }
        default: {
          const key = keyOf(ev.object);
          this.cache.set(key, ev.object);
          last = ev.object.metadata?.resourceVersion ?? last;
          this.changes.next({ kind: 'upsert', key, object: ev.object });
        }
      }
    });
    this.watch = handle;
    this.stats.watches++;
    if (this.stopped) handle.stop();
    try {
      await handle.done;
    } catch (err) {
      // 410 can also come as the watch request's own status.
      if ((err as { statusCode?: number })?.statusCode === 410) gone = true;
      if (!gone && !this.stopped && !failure) throw watchFailed(this.name, (err as Error)?.message ?? String(err), err);
    } finally {
      this.watch = undefined;
    }
    if (failure) throw failure;
    return { rv: last, gone };
  }

  private backoff(failures: number): number {
    const min = this.opts.minBackoffMs ?? 200;
    const max = this.opts.maxBackoffMs ?? 30_000;
    const base = Math.min(max, min * 2 ** Math.min(failures, 20));
    return base / 2 + Math.random() * (base / 2);
  }

  private sleep(ms: number): Promise<void> {
    return this.stopped ? Promise.resolve() : this.sleeper.sleep(ms);
  }
}
