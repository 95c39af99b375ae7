/**
 * Identity GC across the cluster, Cilium's two-round mark-and-sweep done by one agent at a time
 * (no operator): under the lock `cilium/state/identities/v1/locks/gc` (an etcd key with a lease;
 * another agent holding it makes this round a no-op), an ID key with no claim under
 * `value/<labels>/` is marked; if it is still unclaimed and unchanged at the next round it is
 * deleted, in a transaction that checks both again, so an identity claimed in between survives.
 */
import type { Etcd3 } from 'etcd3';
import type { Logger } from '../../hive/logger.js';
import { etcd3 } from './etcd3-lib.js';
import { unavailable } from './errors.js';
import { prefixEnd } from './mirror.js';
import { KEYS } from './types.js';

/** One round's result. */
export interface GCRound {
  /** Another agent held the lock: nothing was done. */
  readonly skipped: boolean;
  readonly marked: number;
  readonly deleted: number;
}

/** The lock key of identity GC. */
export const GC_LOCK = `${KEYS.identitiesLocks}gc`;

/** Runs GC rounds; see the module comment. */
export class KVIdentityGC {
  /** ID -> mod revision of its key when it was marked. */
  private marked = new Map<number, string>();

  constructor(
    private readonly etcd: Etcd3,
    private readonly log: Logger,
    private readonly lockTtlSeconds = 60,
  ) {}

  /** One round. */
  async run(): Promise<GCRound> {
    const lock = this.etcd.lock(GC_LOCK).ttl(this.lockTtlSeconds);
    try {
      await lock.acquire();
    } catch (err) {
      if (err instanceof etcd3().EtcdLockFailedError) return { skipped: true, marked: 0, deleted: 0 };
      throw unavailable('taking the identity GC lock', err);
    }
    try {
      return await this.round();
    } finally {
      await lock.release().catch(() => undefined);
    }
  }

  private async round(): Promise<GCRound> {
    let ids, claims;
    try {
      [ids, claims] = await Promise.all([
        this.etcd.getAll().prefix(KEYS.identitiesId).exec(),
        this.etcd.getAll().prefix(KEYS.identitiesValue).keys(),
      ]);
    } catch (err) {
      throw unavailable('listing identities for GC', err);
    }
    const claimed = new Set(claims.map((k) => k.slice(KEYS.identitiesValue.length, k.lastIndexOf('/'))));
    const next = new Map<number, string>();
    let deleted = 0;
    for (const kv of ids.kvs) {
      const id = Number(kv.key.toString().slice(KEYS.identitiesId.length));
      const list = kv.value.toString();
      if (!Number.isInteger(id) || claimed.has(list)) continue;
      const rev = String(kv.mod_revision);
      if (this.marked.get(id) !== rev) {
        next.set(id, rev);
        continue;
      }
      const valuePrefix = `${KEYS.identitiesValue}${list}/`;
      const res = await this.etcd.kv.txn({
        compare: [
          { key: kv.key, target: 'Mod', result: 'Equal', mod_revision: rev },
          { key: Buffer.from(valuePrefix), range_end: prefixEnd(valuePrefix), target: 'Create', result: 'Equal', create_revision: 0 },
        ],
        success: [
          { request_delete_range: { key: kv.key } },
          // the label set's key goes with its ID (if it names this one)
          { request_txn: { compare: [{ key: Buffer.from(`${KEYS.identitiesLabels}${list}`), target: 'Value', result: 'Equal', value: Buffer.from(String(id)) }],
            success: [{ request_delete_range: { key: Buffer.from(`${KEYS.identitiesLabels}${list}`) } }], failure: [] } },
        ],
        failure: [],
      }).catch((err: unknown) => {
        throw unavailable(`deleting identity ${id}`, err);
      });
      if (res.succeeded) deleted++;
    }
    this.marked = next;
    if (deleted || next.size) this.log.info({ marked: next.size, deleted }, 'identity GC round');
    return { skipped: false, marked: next.size, deleted };
  }
}
