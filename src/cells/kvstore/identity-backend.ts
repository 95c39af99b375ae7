/**
 * Identities in etcd, Cilium's kvstore layout and one key of Cellium's own:
 *
 *   cilium/state/identities/v1/id/<ID>                     -> sorted labels (no lease)
 *   cilium/state/identities/v1/value/<sorted labels>/<node> -> <ID> (this node's claim, session lease)
 *   cilium/state/identities/v1/labels/<sorted labels>       -> <ID> (no lease: the label set's one ID)
 *
 * with labels written as Cilium's SortedList (`k8s:app=web;k8s:io.kubernetes.pod.namespace=default;`).
 * A new identity is one transaction, create-only on both the ID's key and the label set's key, so
 * two agents can never give one ID two label sets, nor one label set two IDs — whatever happened
 * to the leased claims (Cilium's claims alone do not keep this: a claim lost with its lease during
 * an outage let a second ID be created). The loser reads what won and takes that ID, or is told
 * the number is taken. The `id/` prefix is mirrored (list-then-watch), so every agent knows every
 * identity of the cluster; this node's claims are put again when the session lease is renewed
 * (both followed by observer jobs: `identity-mirror` from construction, `identity-reclaim` from load).
 * At load, label sets with two IDs (left by older agents) are repaired: the lowest is kept.
 */
import type { Etcd3, Lease } from 'etcd3';
import { Subject } from 'rxjs';
import type { Jobs } from '../../hive/jobs.js';
import type { Logger } from '../../hive/logger.js';
import type { IdentityBackend, IdentityBackendEvent, StoredIdentity } from '../identity/index.js';
import { KVStoreError, unavailable } from './errors.js';
import { exponentialBackoff } from '../../lib/backoff.js';
import { sleep } from '../../hive/timeout.js';
import { PrefixMirror, type MirrorEvent } from './mirror.js';
import { untilAborted } from './client.js';
import { KEYS, type KVStore } from './types.js';

/** Cilium's kvstore form of a label list: `source:key=value;` per label, sorted. */
export function sortedList(labels: readonly string[]): string {
  return [...labels].map((l) => (l.includes('=') ? l : `${l}=`)).sort().map((l) => `${l};`).join('');
}

/** The labels of a SortedList (`source:key` for an empty value, as formatLabels writes them). */
export function parseSortedList(s: string): string[] {
  return s.split(';').filter(Boolean).map((l) => (l.endsWith('=') ? l.slice(0, -1) : l)).sort();
}

/** How long closing waits for claims in progress. */
const CLOSE_WAIT_MS = 1000;

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
  /** Whether lease renewals put the claims again (from the end of load to close). */
  private reclaiming = false;
  /** Label sets whose claim by this node may exist in etcd unused (a withdrawal failed): deleted when etcd answers. */
  private readonly orphans = new Set<string>();
  private closed = false;

  /** `jobs`: the kvstore module's, which follow the mirror and the session lease renewals. */
  constructor(
    private readonly kv: KVStore,
    jobs: Jobs,
    private readonly log: Logger,
  ) {
    this.mirror = new PrefixMirror(kv, KEYS.identitiesId, log);
    const now = { immediate: true, sync: true } as const;
    jobs.observer('identity-mirror', this.mirror.events$, (ev) => this.onMirror(ev), now);
    jobs.observer('identity-reclaim', kv.sessionRenewed$, () => this.reclaiming ? this.reclaimAll() : undefined, now);
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
    try {
      await this.repairSplits();
    } catch (err) {
      this.log.warn({ err: (err as Error).message }, 'could not check the kvstore for label sets with two identities; retried at the next start');
    }
    this.reclaiming = true;
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

  /**
   * See IdentityBackend. Bounded by `signal` (the allocator's time limit and the agent's stop):
   * once it aborts the call rejects, and a claim etcd committed anyway is deleted again.
   */
  claim(_key: string, labels: readonly string[], id: number, signal?: AbortSignal): Promise<number | undefined> {
    const list = sortedList(labels);
    if (this.closed) return Promise.reject(unavailable(`claiming identity ${id}`, new Error('the agent is stopping')));
    const tried: { last?: Error } = {};
    // aborted: the last etcd error says why better than the bare time limit
    return untilAborted(this.serial(list, () => this.claimIn(list, id, tried, signal)), signal, () => tried.last ?? signal?.reason);
  }

  /**
   * One claim. With a bound (`signal`), a call etcd did not answer is tried again after a short
   * wait until the bound ends (the client's circuit breaker stays open a few seconds after etcd
   * comes back); without one it fails at once.
   */
  private async claimIn(list: string, id: number, tried: { last?: Error }, signal?: AbortSignal): Promise<number | undefined> {
    for (let attempt = 0; ; attempt++) {
      try {
        if (this.orphans.has(list) && !this.mine.has(list) && this.kv.connected()) await this.withdraw(list);
        const known = this.byList.get(list);
        if (known !== undefined && (await this.claimExisting(list, known, signal))) return known;
        return await this.claimNew(list, id, signal);
      } catch (err) {
        if (!signal || signal.aborted || this.closed || !(err instanceof KVStoreError) || err.code !== 'unavailable') throw err;
        tried.last = err;
        await sleep(exponentialBackoff(attempt, 200, 1000), signal).catch(() => undefined);
        if (signal.aborted) throw err;
      }
    }
  }

  /** This node's session lease, waited for no longer than `signal` allows. */
  private async lease(what: string, signal?: AbortSignal): Promise<Lease> {
    try {
      return await this.kv.session(signal);
    } catch (err) {
      throw unavailable(`${what} (no session lease)`, err);
    }
  }

  /**
   * After a claim was written under `lease`: if the call was aborted meanwhile it is taken back and
   * the abort thrown; if the session lease was replaced meanwhile (the claim goes with the old one,
   * and the re-claim after the renewal did not know it) it is put again under the current one.
   */
  private async settle(list: string, id: number, lease: Lease, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted || this.closed) {
      await this.withdraw(list);
      throw signal?.reason instanceof Error ? signal.reason : unavailable(`claiming identity ${id}`, new Error('the agent is stopping'));
    }
    this.mine.set(list, id);
    this.orphans.delete(list);
    if (!this.kv.isCurrent(lease)) {
      const now = await this.lease(`claiming identity ${id} again`, signal);
      await now.put(this.valueKey(list)).value(String(id));
    }
  }

  /** Deletes this node's claim on a label set it does not use (best effort: remembered and retried when etcd is down). */
  private async withdraw(list: string): Promise<void> {
    this.mine.delete(list);
    try {
      await this.etcd.delete().key(this.valueKey(list));
      this.orphans.delete(list);
    } catch {
      this.orphans.add(list);
    }
  }

  /** Puts this node's claim on an existing ID, if the ID's key still names the label set. */
  private async claimExisting(list: string, id: number, signal?: AbortSignal): Promise<boolean> {
    const lease = await this.lease(`claiming identity ${id}`, signal);
    if (signal?.aborted) throw signal.reason as Error;
    const idKey = `${KEYS.identitiesId}${id}`;
    let ok: boolean;
    try {
      const res = await this.etcd.if(idKey, 'Value', '==', list).then(lease.put(this.valueKey(list)).value(String(id))).commit();
      ok = res.succeeded;
    } catch (err) {
      await this.leaseCheck(lease, err);
      throw unavailable(`claiming identity ${id}`, err);
    }
    if (ok) await this.settle(list, id, lease, signal);
    return ok;
  }

  /** A write refused for its lease: the lease is checked, so a lost one is replaced (and everything put again). */
  private async leaseCheck(lease: Lease, err: unknown): Promise<void> {
    if (/lease not found/i.test((err as Error)?.message ?? '')) await lease.keepaliveOnce().catch(() => undefined);
  }

  /** The label set's own key (the one ID it has). */
  private labelsKey(list: string): Buffer {
    return Buffer.from(`${KEYS.identitiesLabels}${list}`);
  }

  /** Creates a new ID: create-only on the ID's key and the label set's key; on a lost race takes the winner's ID or reports the number taken. */
  private async claimNew(list: string, id: number, signal?: AbortSignal): Promise<number | undefined> {
    const lease = await this.lease(`creating identity ${id}`, signal);
    if (signal?.aborted) throw signal.reason as Error;
    const idKey = Buffer.from(`${KEYS.identitiesId}${id}`);
    const labelsKey = this.labelsKey(list);
    let res;
    try {
      res = await this.etcd.kv.txn({
        compare: [
          { key: idKey, target: 'Create', result: 'Equal', create_revision: 0 },
          { key: labelsKey, target: 'Create', result: 'Equal', create_revision: 0 },
        ],
        success: [
          { request_put: { key: idKey, value: Buffer.from(list) } },
          { request_put: { key: labelsKey, value: Buffer.from(String(id)) } },
          { request_put: { key: Buffer.from(this.valueKey(list)), value: Buffer.from(String(id)), lease: await lease.grant() } },
        ],
        failure: [{ request_range: { key: idKey } }, { request_range: { key: labelsKey } }],
      });
    } catch (err) {
      await this.leaseCheck(lease, err);
      // the transaction may have been committed without an answer: the claim is taken back once etcd answers
      this.mine.delete(list);
      this.orphans.add(list);
      throw unavailable(`creating identity ${id}`, err);
    }
    if (res.succeeded) {
      this.onMirror({ kind: 'upsert', key: String(id), value: list });
      await this.settle(list, id, lease, signal);
      return id;
    }
    const [idRange, labelsRange] = res.responses.map((r) => r.response_range);
    const holder = idRange?.kvs[0];
    if (holder) this.onMirror({ kind: 'upsert', key: String(id), value: holder.value.toString() });
    const other = Number(labelsRange?.kvs[0]?.value.toString());
    if (Number.isInteger(other) && other > 0) {
      if (await this.claimExisting(list, other, signal)) return other;
      // the label set's key names an ID that is gone (its key deleted by hand): drop the stale key, the next try creates one
      const otherKey = `${KEYS.identitiesId}${other}`;
      await this.etcd.if(otherKey, 'Create', '==', 0).and(labelsKey.toString(), 'Value', '==', String(other)).then(this.etcd.delete().key(labelsKey.toString())).commit()
        .catch((err: unknown) => {
          throw unavailable(`checking identity ${other}`, err);
        });
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

  /**
   * Puts every claim of this node again (after a new session lease, or a reset store), and deletes
   * claims left unused by failed requests. An ID that vanished (GC, or a wiped etcd) is created
   * again with its label set's key, only if neither is taken; a label set that has another ID by
   * then is a conflict, logged, and no second ID is made.
   */
  private async reclaimAll(): Promise<void> {
    let n = 0;
    for (const list of [...this.orphans]) await this.serial(list, () => (this.mine.has(list) ? Promise.resolve() : this.withdraw(list))).catch(() => undefined);
    for (const [list, id] of [...this.mine]) {
      await this.serial(list, async () => {
        if (this.mine.get(list) !== id) return;
        const lease = await this.kv.session();
        const idKey = Buffer.from(`${KEYS.identitiesId}${id}`);
        const labelsKey = this.labelsKey(list);
        const res = await this.etcd.kv.txn({
          compare: [],
          success: [
            { request_txn: { compare: [{ key: idKey, target: 'Create', result: 'Equal', create_revision: 0 }, { key: labelsKey, target: 'Create', result: 'Equal', create_revision: 0 }],
              success: [{ request_put: { key: idKey, value: Buffer.from(list) } }, { request_put: { key: labelsKey, value: Buffer.from(String(id)) } }], failure: [] } },
            { request_range: { key: idKey } },
            { request_range: { key: labelsKey } },
          ],
          failure: [],
        });
        const [, idRange, labelsRange] = res.responses.map((r) => r.response_range);
        const [hasId, hasLabels] = [idRange?.kvs[0]?.value.toString(), labelsRange?.kvs[0]?.value.toString()];
        if (hasId !== list || (hasLabels !== undefined && hasLabels !== String(id))) {
          this.mine.delete(list);
          this.log.error({ id, labels: list, idNames: hasId ?? null, labelSetHas: hasLabels ?? null }, 'identity conflict after the store was reset: this node\'s number or label set was taken by another agent meanwhile; no second identity is made: this node\'s endpoints with it keep it until they are regenerated');
          return;
        }
        await lease.put(this.valueKey(list)).value(String(id));
        n++;
      }).catch((err: Error) => this.log.warn({ id, err: err.message }, 'could not claim an identity again'));
    }
    this.log.info({ claims: n }, 'identity claims put again under the new session lease');
  }

  /**
   * Gives every label set its key (IDs made before the key existed), and repairs label sets with
   * two IDs (left by an older agent, e.g. claims lost with a lease during an outage): the ID the
   * label set's key names is kept, else the lowest (the one every agent took), the others deleted,
   * each in a transaction that checks that both keys still name the label set.
   */
  private async repairSplits(): Promise<void> {
    const byList = new Map<string, number[]>();
    for (const [id, list] of this.byId) byList.set(list, [...(byList.get(list) ?? []), id]);
    const owners = await this.etcd.getAll().prefix(KEYS.identitiesLabels).strings();
    for (const [list, unsorted] of byList) {
      const ids = unsorted.sort((a, b) => a - b);
      const named = Number(owners[`${KEYS.identitiesLabels}${list}`]);
      const keep = ids.includes(named) ? named : ids[0]!;
      const labelsKey = this.labelsKey(list).toString();
      if (!ids.includes(named)) await this.etcd.if(labelsKey, 'Create', '==', 0).then(this.etcd.put(labelsKey).value(String(keep))).commit();
      if (ids.length < 2) continue;
      const claims = await this.etcd.getAll().prefix(`${KEYS.identitiesValue}${list}/`).strings();
      for (const id of ids.filter((i) => i !== keep)) {
        const res = await this.etcd.if(`${KEYS.identitiesId}${keep}`, 'Value', '==', list).and(`${KEYS.identitiesId}${id}`, 'Value', '==', list).and(labelsKey, 'Value', '==', String(keep))
          .then(this.etcd.delete().key(`${KEYS.identitiesId}${id}`)).commit();
        const claimedBy = Object.entries(claims).filter(([, v]) => v === String(id)).map(([k]) => k.slice(k.lastIndexOf('/') + 1));
        if (!res.succeeded) continue;
        this.onMirror({ kind: 'delete', key: String(id), value: list });
        this.log.warn({ labels: list, kept: keep, removed: id, claimedBy }, `the label set had two identities in the kvstore (${keep} and ${id}): kept ${keep}, removed ${id}; endpoints that used ${id} get ${keep} when restored or regenerated`);
      }
    }
  }

  /** See IdentityBackend: no claim starts any more; pending ones are waited for a moment (each ends within its call deadline anyway). */
  async close(): Promise<void> {
    this.closed = true;
    this.reclaiming = false;
    await Promise.race([Promise.all([...this.ops.values()]), new Promise((r) => setTimeout(r, CLOSE_WAIT_MS).unref())]);
    await this.mirror.stop();
    this.subject.complete();
  }
}

/** The labels of an allocator key (`;`-joined formatted labels). */
function parseKey(key: string): string[] {
  return key.split(';').filter(Boolean);
}
