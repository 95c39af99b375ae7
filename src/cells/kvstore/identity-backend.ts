/**
 * Identities in etcd, Cilium's kvstore layout:
 *
 *   cilium/state/identities/v1/id/<ID>                     -> sorted labels (no lease)
 *   cilium/state/identities/v1/value/<sorted labels>/<node> -> <ID> (this node's claim, session lease)
 *
 * with labels written as Cilium's SortedList (`k8s:app=web;k8s:io.kubernetes.pod.namespace=default;`).
 * A new identity is one transaction, create-only: it succeeds only when neither the ID's key nor
 * any claim on the label set exists, so two agents can never give one ID two label sets nor (while
 * anyone claims it) one label set two IDs. The loser reads what won and takes that ID, or is told
 * the number is taken. The `id/` prefix is mirrored (list-then-watch), so every agent knows every
 * identity of the cluster; this node's claims are put again when the session lease is renewed.
 */
import type { Etcd3 } from 'etcd3';
import { Subject } from 'rxjs';
import type { Logger } from '../../hive/logger.js';
import type { IdentityBackend, IdentityBackendEvent, StoredIdentity } from '../identity/index.js';
import { unavailable } from './errors.js';
import { PrefixMirror, type MirrorEvent } from './mirror.js';
import { KEYS, type KVStore } from './types.js';

/** Cilium's kvstore form of a label list: `source:key=value;` per label, sorted. */
export function sortedList(labels: readonly string[]): string {
  return [...labels].map((l) => (l.includes('=') ? l : `${l}=`)).sort().map((l) => `${l};`).join('');
}

/** The labels of a SortedList (`source:key` for an empty value, as formatLabels writes them). */
export function parseSortedList(s: string): string[] {
  return s.split(';').filter(Boolean).map((l) => (l.endsWith('=') ? l.slice(0, -1) : l)).sort();
}

function prefixEnd(prefix: string): Buffer {
  const b = Buffer.from(prefix);
  b[b.length - 1]++;
  return b;
}

/** The etcd identity backend; see the module comment. */
export class EtcdIdentityBackend implements IdentityBackend {
  readonly name = 'etcd';
  private readonly mirror: PrefixMirror;
  /** ID -> sorted list, from the mirror. */
  private readonly byId = new Map<number, string>();
  /** Sorted list -> ID, from the mirror (the lowest ID when an old orphan duplicates a label set). */
  private readonly byList = new Map<string, number>();
  /** This node's claims: sorted list -> ID. */
  private readonly mine = new Map<string, number>();
  /** Per label set, the last operation on this node's claim (claims and removals run in order). */
  private readonly ops = new Map<string, Promise<unknown>>();
  private readonly subject = new Subject<IdentityBackendEvent>();
  /** See IdentityBackend. */
  readonly events$ = this.subject.asObservable();
  private renewals?: { unsubscribe(): void };

  constructor(
    private readonly kv: KVStore,
    private readonly log: Logger,
  ) {
    this.mirror = new PrefixMirror(kv.etcd, KEYS.identitiesId, log);
    this.mirror.events$.subscribe((ev) => this.onMirror(ev));
  }

  private get etcd(): Etcd3 {
    return this.kv.etcd;
  }

  private valueKey(list: string): string {
    return `${KEYS.identitiesValue}${list}/${this.kv.config.nodeName}`;
  }

  private onMirror(ev: MirrorEvent): void {
    const id = Number(ev.key);
    if (!Number.isInteger(id)) return;
    if (ev.kind === 'upsert') {
      this.byId.set(id, ev.value);
      const have = this.byList.get(ev.value);
      if (have === undefined || id < have) this.byList.set(ev.value, id);
    } else {
      this.byId.delete(id);
      if (this.byList.get(ev.value) === id) this.byList.delete(ev.value);
    }
    this.subject.next({ kind: ev.kind, identity: { id, labels: parseSortedList(ev.value) } });
  }

  /** See IdentityBackend: every identity of the cluster, then watched. */
  async load(): Promise<readonly StoredIdentity[]> {
    await this.mirror.start();
    this.renewals = this.kv.sessionRenewed$.subscribe(() => void this.reclaimAll());
    return [...this.byId].map(([id, list]) => ({ id, labels: parseSortedList(list) }));
  }

  /** See IdentityBackend. */
  isTaken(id: number): boolean {
    return this.byId.has(id);
  }

  /** The IDs this node claims (sorted list -> ID). */
  claims(): ReadonlyMap<string, number> {
    return this.mine;
  }

  private serial<T>(list: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.ops.get(list) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    const tail = next.catch(() => undefined);
    this.ops.set(list, tail);
    void tail.then(() => {
      if (this.ops.get(list) === tail) this.ops.delete(list);
    });
    return next;
  }

  /** See IdentityBackend. */
  claim(_key: string, labels: readonly string[], id: number): Promise<number | undefined> {
    const list = sortedList(labels);
    return this.serial(list, async () => {
      const known = this.byList.get(list);
      if (known !== undefined) {
        if (await this.claimExisting(list, known)) return known;
      }
      return this.claimNew(list, id);
    });
  }

  /** Puts this node's claim on an existing ID, if the ID's key still names the label set. */
  private async claimExisting(list: string, id: number): Promise<boolean> {
    const lease = await this.kv.session();
    const idKey = `${KEYS.identitiesId}${id}`;
    let ok: boolean;
    try {
      const res = await this.etcd.if(idKey, 'Value', '==', list).then(lease.put(this.valueKey(list)).value(String(id))).commit();
      ok = res.succeeded;
    } catch (err) {
      throw unavailable(`claiming identity ${id}`, err);
    }
    if (ok) this.mine.set(list, id);
    return ok;
  }

  /** Creates a new ID (create-only); on a lost race takes the winner's ID or reports the number taken. */
  private async claimNew(list: string, id: number): Promise<number | undefined> {
    const lease = await this.kv.session();
    const idKey = Buffer.from(`${KEYS.identitiesId}${id}`);
    const valuePrefix = `${KEYS.identitiesValue}${list}/`;
    let res;
    try {
      res = await this.etcd.kv.txn({
        compare: [
          { key: idKey, target: 'Create', result: 'Equal', create_revision: 0 },
          // nobody claims the label set: the compare holds for every key of the (empty) range
          { key: Buffer.from(valuePrefix), range_end: prefixEnd(valuePrefix), target: 'Create', result: 'Equal', create_revision: 0 },
        ],
        success: [
          { request_put: { key: idKey, value: Buffer.from(list) } },
          { request_put: { key: Buffer.from(this.valueKey(list)), value: Buffer.from(String(id)), lease: await lease.grant() } },
        ],
        failure: [
          { request_range: { key: idKey } },
          { request_range: { key: Buffer.from(valuePrefix), range_end: prefixEnd(valuePrefix) } },
        ],
      });
    } catch (err) {
      throw unavailable(`creating identity ${id}`, err);
    }
    if (res.succeeded) {
      this.mine.set(list, id);
      this.onMirror({ kind: 'upsert', key: String(id), value: list });
      return id;
    }
    const [idRange, claimsRange] = res.responses.map((r) => r.response_range);
    const holder = idRange?.kvs[0];
    if (holder) this.onMirror({ kind: 'upsert', key: String(id), value: holder.value.toString() });
    for (const kv of claimsRange?.kvs ?? []) {
      const other = Number(kv.value.toString());
      if (Number.isInteger(other) && (await this.claimExisting(list, other))) return other;
    }
    return undefined;
  }

  /** See IdentityBackend: withdraws this node's claim on the label set. */
  remove(key: string): Promise<void> {
    const list = sortedList(parseKey(key));
    if (!this.mine.has(list)) return Promise.resolve();
    return this.serial(list, async () => {
      if (!this.mine.has(list)) return;
      try {
        await this.etcd.delete().key(this.valueKey(list));
      } catch (err) {
        throw unavailable(`releasing identity ${this.mine.get(list)}`, err);
      }
      this.mine.delete(list);
    });
  }

  /** Puts every claim of this node again (after a new session lease). */
  private async reclaimAll(): Promise<void> {
    let n = 0;
    for (const [list, id] of [...this.mine]) {
      await this.serial(list, async () => {
        if (this.mine.get(list) !== id) return;
        const lease = await this.kv.session();
        const idKey = `${KEYS.identitiesId}${id}`;
        // the ID's key is not leased; re-create it if identity GC removed it meanwhile
        await this.etcd.if(idKey, 'Create', '==', 0).then(this.etcd.put(idKey).value(list)).commit();
        await lease.put(this.valueKey(list)).value(String(id));
        n++;
      }).catch((err: Error) => this.log.warn({ id, err: err.message }, 'could not claim an identity again'));
    }
    this.log.info({ claims: n }, 'identity claims put again under the new session lease');
  }

  /** See IdentityBackend. */
  async close(): Promise<void> {
    this.renewals?.unsubscribe();
    await Promise.all([...this.ops.values()]);
    await this.mirror.stop();
    this.subject.complete();
  }
}

/** The labels of an allocator key (`;`-joined formatted labels). */
function parseKey(key: string): string[] {
  return key.split(';').filter(Boolean);
}
