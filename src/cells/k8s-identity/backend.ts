/**
 * Identities as CiliumIdentity objects (cilium.io/v2, cluster-scoped), Cilium's default
 * --identity-allocation-mode=crd. Every CiliumIdentity of the cluster is listed and watched (a
 * Resource, Cilium's informer), indexed by number and by label set, so every agent knows every
 * identity. A new one is created create-only: the apiserver refuses a second object of a number
 * (409), and the loser reads what is there: its label set's, it takes it; another's, it offers the
 * next number. The allocator offers a new label set the number its hash names first
 * (`hashedNumbers`), so two agents racing for one label set race for the same object and cannot
 * both win. A label set that still ends up with two numbers (a number of its sequence freed in
 * between, or a restored endpoint's own number) is seen by the watch: the lowest is used, the
 * other stays known and is collected once unused (docs/cells/k8s-identity.md).
 *
 * An identity this node holds stays alive: the GC's mark (`io.cilium.heartbeat`) on one is removed
 * as soon as the watch shows it, and one deleted while held here is created again, create-only.
 * The held ones are kept in a journal in the state directory (journal.ts), so that they work
 * across a restart while the apiserver is down.
 */
import { Subject } from 'rxjs';
import type { Logger } from '../../hive/logger.js';
import { sleep } from '../../hive/timeout.js';
import { exponentialBackoff } from '../../lib/backoff.js';
import type { IdentityBackend, IdentityBackendEvent, StoredIdentity } from '../identity/index.js';
import type { ResourceEvent } from '../k8s/index.js';
import { HEARTBEAT_ANNOTATION, type CiliumIdentity, type IdentityApi } from './api.js';
import { IdentityRequestError, badIdentityObject } from './errors.js';
import type { HeldJournal } from './journal.js';
import { idOf, identityObject, labelsOf } from './objects.js';

/** What the backend reads the cluster's identities from: a Resource of CiliumIdentities. */
export interface IdentitySource {
  readonly synced: Promise<void>;
}

interface Known {
  readonly obj: CiliumIdentity;
  readonly key: string;
  readonly labels: string[];
}

/** The CiliumIdentity backend; see the module comment. */
export class CrdIdentityBackend implements IdentityBackend {
  readonly name = 'crd';
  readonly hashedNumbers = true;
  private readonly byId = new Map<number, Known>();
  /** Label set -> its numbers. */
  private readonly byKey = new Map<string, Set<number>>();
  /** Numbers this node holds -> label set. */
  private readonly mine = new Map<number, string>();
  private readonly subject = new Subject<IdentityBackendEvent>();
  /** See IdentityBackend. */
  readonly events$ = this.subject.asObservable();
  /** Keep-alive writes in flight (unmark, create again). */
  private readonly inflight = new Set<Promise<void>>();
  private readonly warned = new Set<string>();
  private closed = false;
  /** Counters for status and benchmarks. */
  readonly stats = { created: 0, taken: 0, reused: 0, unmarked: 0, recreated: 0, duplicates: 0 };

  constructor(
    private readonly api: Pick<IdentityApi, 'get' | 'create' | 'unmark'>,
    private readonly source: IdentitySource,
    private readonly log: Logger,
    /** Where the held identities are kept across restarts (none: not kept). */
    private readonly journal?: HeldJournal,
    /** How long load waits for the list before it answers with the journal alone (ms). */
    private readonly syncWaitMs = 2000,
  ) {}

  /** A change of the CiliumIdentity Resource (the cell's observer job `ciliumidentities`). */
  onEvent(ev: ResourceEvent<CiliumIdentity>): void {
    if (ev.kind === 'sync' || this.closed) return;
    if (ev.kind === 'upsert') this.record(ev.object);
    else this.drop(ev.object);
  }

  /** Takes an object into the index (and tells the allocator); keeps a held one alive if the GC marked it. */
  private record(obj: CiliumIdentity): Known | undefined {
    const id = idOf(obj);
    const labels = labelsOf(obj);
    if (id === undefined || !labels) {
      const name = obj.metadata?.name ?? '?';
      if (!this.warned.has(name)) this.log.warn({ err: badIdentityObject(name, id === undefined ? 'its name is not a number' : 'its security-labels are missing or not source:key -> string').message }, 'CiliumIdentity ignored');
      this.warned.add(name);
      return undefined;
    }
    const key = labels.join(';');
    const old = this.byId.get(id);
    const k: Known = { obj, key, labels };
    this.byId.set(id, k);
    if (old && old.key !== key) this.unindex(id, old.key);
    const ids = this.byKey.get(key) ?? new Set<number>();
    const fresh = !ids.has(id);
    ids.add(id);
    this.byKey.set(key, ids);
    if (fresh && ids.size > 1) {
      this.stats.duplicates++;
      this.log.warn({ labels: key, ids: [...ids].sort((a, b) => a - b) }, 'label set with two CiliumIdentities (created concurrently): the lowest is used, the others are collected once unused');
    }
    if (!old || old.key !== key) this.subject.next({ kind: 'upsert', identity: { id, labels } });
    const mark = obj.metadata.annotations?.[HEARTBEAT_ANNOTATION];
    if (mark !== undefined && this.mine.get(id) === key) this.keepAlive(() => this.unmark(id, mark));
    return k;
  }

  private unindex(id: number, key: string): void {
    const ids = this.byKey.get(key);
    ids?.delete(id);
    if (ids && ids.size === 0) this.byKey.delete(key);
  }

  private drop(obj: CiliumIdentity): void {
    const id = idOf(obj);
    const known = id === undefined ? undefined : this.byId.get(id);
    if (id === undefined || !known) return;
    this.byId.delete(id);
    this.unindex(id, known.key);
    this.subject.next({ kind: 'delete', identity: { id, labels: known.labels } });
    if (this.mine.get(id) === known.key) this.keepAlive(() => this.recreate(id, known));
  }

  private keepAlive(fn: () => Promise<void>): void {
    if (this.closed) return;
    const p = fn().catch((err: unknown) => this.log.warn({ err: (err as Error).message }, 'could not keep an identity this node holds alive; retried when the watch shows it again'));
    this.inflight.add(p);
    void p.finally(() => this.inflight.delete(p));
  }

  private async unmark(id: number, mark: string): Promise<void> {
    if (await this.api.unmark(String(id), mark)) {
      this.stats.unmarked++;
      this.log.debug({ id }, 'identity in use here: the GC\'s mark removed');
    }
  }

  /** A held identity was deleted (GC, or by hand): created again with the same number and labels, create-only. */
  private async recreate(id: number, known: Known): Promise<void> {
    const res = await this.api.create(identityObject(id, known.labels));
    if (res !== 'exists') {
      this.stats.recreated++;
      this.record(res);
      this.log.warn({ id, labels: known.key }, 'identity in use here was deleted in the apiserver: created again');
      return;
    }
    const now = await this.api.get(String(id));
    if (now) this.record(now);
    if (now && labelsOf(now)?.join(';') !== known.key) {
      this.log.error({ id, labels: known.key, now: labelsOf(now)?.join(';') ?? null }, 'identity in use here was deleted and its number taken by another label set: this node\'s endpoints with it keep it until they are regenerated');
    }
  }

  /**
   * See IdentityBackend: the identities this node held before (the journal, `held`), and every
   * identity of the cluster once the list is in; without an answer within `syncWaitMs` the
   * journal's alone (the list comes through the watch's events later). Once listed, the held
   * ones are checked: one deleted meanwhile is created again, one whose number another label
   * set took is a conflict, logged and no longer held.
   */
  async load(): Promise<readonly StoredIdentity[]> {
    const held = (await this.journal?.load()) ?? [];
    for (const h of held) this.mine.set(h.id, h.labels.join(';'));
    let timer: NodeJS.Timeout | undefined;
    const synced = await Promise.race([
      this.source.synced.then(() => true),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), this.syncWaitMs))),
    ]);
    clearTimeout(timer);
    if (synced) this.checkHeld();
    else {
      this.log.warn({ held: held.length, waitedMs: this.syncWaitMs }, 'CiliumIdentities not listed yet (apiserver unreachable?): the identities this node held are used as they were; checked once listed');
      void this.source.synced.then(() => this.checkHeld());
    }
    const ids = new Set(held.map((h) => h.id));
    return [...held.map((h) => ({ id: h.id, labels: h.labels, held: true })), ...[...this.byId].filter(([id]) => !ids.has(id)).map(([id, k]) => ({ id, labels: k.labels }))];
  }

  /** The held identities against the apiserver's: created again when gone, unmarked when marked, dropped on a conflict. */
  private checkHeld(): void {
    if (this.closed) return;
    for (const [id, key] of [...this.mine]) {
      const k = this.byId.get(id);
      if (!k) {
        this.keepAlive(() => this.recreate(id, { obj: identityObject(id, key.split(';')), key, labels: key.split(';') }));
        continue;
      }
      if (k.key !== key) {
        this.mine.delete(id);
        this.log.error({ id, labels: key, now: k.key }, 'identity held here before the restart has another label set in the apiserver (deleted and taken while this node was down): this node\'s endpoints with it keep it until they are regenerated');
        continue;
      }
      const mark = k.obj.metadata.annotations?.[HEARTBEAT_ANNOTATION];
      if (mark !== undefined) this.keepAlive(() => this.unmark(id, mark));
    }
    this.persist();
  }

  /** Writes the held set to the journal (in the background). */
  private persist(): void {
    this.journal?.schedule(() => [...this.mine].map(([id, key]) => ({ id, labels: key.split(';') })));
  }

  /** See IdentityBackend. */
  isTaken(id: number): boolean {
    return this.byId.has(id);
  }

  /** The lowest number of a label set in this node's view. */
  lowest(key: string): number | undefined {
    const ids = this.byKey.get(key);
    return ids?.size ? Math.min(...ids) : undefined;
  }

  /** The numbers this node holds. */
  held(): ReadonlyMap<number, string> {
    return this.mine;
  }

  /**
   * See IdentityBackend. Requests the apiserver did not answer (or answered "not now") are tried
   * again after a short wait until `signal` aborts (the allocator's time limit, the agent's stop).
   */
  async claim(key: string, labels: readonly string[], id: number, signal?: AbortSignal): Promise<number | undefined> {
    for (let attempt = 0; ; attempt++) {
      if (this.closed) throw new IdentityRequestError(0, `kubernetes: claiming identity ${id}: the agent is stopping`);
      try {
        const known = this.lowest(key);
        const got = known !== undefined && (await this.claimExisting(known, key, signal)) ? known : await this.claimNew(key, labels, id, signal);
        if (got !== undefined) this.persist();
        return got;
      } catch (err) {
        if (!signal || signal.aborted || !(err instanceof IdentityRequestError) || !err.retryable) throw err;
        await sleep(exponentialBackoff(attempt, 100, 1000), signal).catch(() => undefined);
        if (signal.aborted) throw err;
      }
    }
  }

  /** Holds an existing identity: removes the GC's mark if it has one. False when it is gone or not the label set's. */
  private async claimExisting(id: number, key: string, signal?: AbortSignal): Promise<boolean> {
    for (let tries = 0; tries < 3; tries++) {
      const k = this.byId.get(id);
      if (!k || k.key !== key) return false;
      const mark = k.obj.metadata.annotations?.[HEARTBEAT_ANNOTATION];
      if (mark === undefined || (await this.api.unmark(String(id), mark, signal))) {
        if (mark !== undefined) this.stats.unmarked++;
        this.mine.set(id, key);
        this.stats.reused++;
        return true;
      }
      // the mark changed or the object is gone: read it again
      const now = await this.api.get(String(id), signal);
      if (!now) {
        this.drop(k.obj);
        return false;
      }
      this.record(now);
    }
    return false;
  }

  /** Creates the identity `id` for the label set; on 409 reads what holds the number. */
  private async claimNew(key: string, labels: readonly string[], id: number, signal?: AbortSignal): Promise<number | undefined> {
    const res = await this.api.create(identityObject(id, labels), signal);
    if (res !== 'exists') {
      this.stats.created++;
      this.mine.set(id, key);
      this.record(res);
      return id;
    }
    this.stats.taken++;
    const now = await this.api.get(String(id), signal);
    if (!now) return undefined; // deleted in between: the next number
    const k = this.record(now);
    if (k?.key === key && (await this.claimExisting(id, key, signal))) return id;
    return undefined;
  }

  /** See IdentityBackend: this node no longer holds the number (references are counted by CiliumEndpoints and holders, not written). */
  async remove(key: string, id?: number): Promise<void> {
    const before = this.mine.size;
    if (id !== undefined) {
      if (this.mine.get(id) === key) this.mine.delete(id);
    } else {
      for (const [n, k] of this.mine) if (k === key) this.mine.delete(n);
    }
    if (this.mine.size !== before) this.persist();
  }

  /** See IdentityBackend: no write starts any more; keep-alive writes in flight are waited for a moment. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.race([Promise.all([...this.inflight]), new Promise((r) => setTimeout(r, 1000).unref())]);
    await this.journal?.idle();
    this.subject.complete();
  }
}
