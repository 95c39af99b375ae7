/**
 * The etcd connection: one `etcd3` client over the endpoints of Cilium's etcd config file, every
 * unary call bounded by a deadline (so an unreachable etcd fails a call instead of hanging it), a
 * session lease kept alive by the client and granted anew when lost, and a status probe per
 * endpoint (`etcd: 1/1 connected, leases=1: http://127.0.0.1:2379 - 3.4.23 (Leader)`).
 */
import type { Etcd3, Lease } from 'etcd3';
import { Subject } from 'rxjs';
import type { Health } from '../../hive/health.js';
import type { Logger } from '../../hive/logger.js';
import { exponentialBackoff } from '../../lib/backoff.js';
import { sleep } from '../../hive/timeout.js';
import { kvstoreOpt, type KVStoreConfig } from './config.js';
import { etcd3 } from './etcd3-lib.js';
import { readEtcdConfig, type EtcdConfig } from './etcd-config.js';
import { badFlag, disabled, unavailable } from './errors.js';
import { KEYS, type KVStore, type KVStoreStatus, type MirrorHandle } from './types.js';
import { describeMirrors, mirrorTrouble } from './mirror-status.js';
import { WRONG } from './mirror.js';
import { randomUUID } from 'node:crypto';

/** Deadline of one unary etcd call. */
export const CALL_TIMEOUT_MS = 5000;

/** Deadline of revoking the session lease at stop (etcd may be down: the lease then expires by itself). */
const REVOKE_TIMEOUT_MS = 1000;

/** Resolves like `p`, or rejects once the signal aborts (with `reason()`, by default the signal's reason). */
export function untilAborted<T>(p: Promise<T>, signal?: AbortSignal, reason: () => unknown = () => signal?.reason): Promise<T> {
  if (!signal) return p;
  if (signal.aborted) return Promise.reject(reason() as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(reason() as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** Longest wait between two attempts to re-establish the watch stream. */
export const WATCH_BACKOFF_MAX_MS = 1000;

/**
 * The etcd3 client's watch reconnect backoff (cockatiel's IBackoff shape), capped at
 * WATCH_BACKOFF_MAX_MS instead of the library's 30 s: watches resume (and a reset store is noticed)
 * within a second of etcd coming back, and a pending reconnect does not hold a stopping agent.
 */
class WatchBackoff {
  constructor(private readonly failures = 0) {}
  get duration(): number {
    return exponentialBackoff(this.failures, 100, WATCH_BACKOFF_MAX_MS);
  }
  next(): WatchBackoff {
    return new WatchBackoff(this.failures + 1);
  }
}

function newClient(hosts: readonly string[], cfg: EtcdConfig, timeoutMs: number): Etcd3 {
  const { Etcd3: Client } = etcd3();
  return new Client({
    hosts: [...hosts],
    faultHandling: { watchBackoff: new WatchBackoff() },
    ...(cfg.tls ? { credentials: { rootCertificate: cfg.tls.ca, ...(cfg.tls.cert ? { certChain: cfg.tls.cert, privateKey: cfg.tls.key } : {}) } } : {}),
    // watches and lease keep-alives are streams and live on; every other call has a deadline
    defaultCallOptions: (ctx) => (ctx.isStream ? {} : { deadline: Date.now() + timeoutMs }),
    dialTimeout: timeoutMs,
  });
}

/** A kvstore on etcd, or the disabled one (no --kvstore). */
export class EtcdKVStore implements KVStore {
  readonly enabled: boolean;
  private readonly etcdConfig?: EtcdConfig;
  private client?: Etcd3;
  private probes: Etcd3[] = [];
  private lease?: Promise<Lease>;
  private current?: Lease;
  private readonly mirrors = new Set<MirrorHandle>();
  /** The epoch key's value as last read, and the highest store revision seen with it. */
  private epochValue?: string;
  private highest = 0;
  private resetting?: Promise<void>;
  private readonly halt = new AbortController();
  private readonly renewed = new Subject<void>();
  /** See KVStore. */
  readonly sessionRenewed$ = this.renewed.asObservable();
  private last: KVStoreStatus;
  private reachable = false;
  private closed = false;

  constructor(
    readonly config: KVStoreConfig,
    private readonly health: Health,
    private readonly log: Logger,
  ) {
    this.enabled = config.kvstore === 'etcd';
    if (!this.enabled) {
      this.last = { state: 'Disabled', msg: 'no kvstore (--kvstore): a single node' };
      return;
    }
    const file = kvstoreOpt(config, 'etcd.config');
    if (!file) throw badFlag('kvstore-opt', config.kvstoreOpt.join(','), '--kvstore=etcd needs --kvstore-opt=etcd.config=FILE (Cilium\'s etcd YAML with endpoints)');
    this.etcdConfig = readEtcdConfig(file);
    this.last = { state: 'Warning', msg: `etcd: 0/${this.etcdConfig.endpoints.length} connected: not probed yet` };
  }

  /** See KVStore. */
  get etcd(): Etcd3 {
    if (!this.etcdConfig) throw disabled('the etcd client');
    this.client ??= newClient(this.etcdConfig.endpoints, this.etcdConfig, CALL_TIMEOUT_MS);
    return this.client;
  }

  /** See KVStore. */
  connected(): boolean {
    return this.reachable;
  }

  /** See KVStore. */
  status(): KVStoreStatus {
    return this.last;
  }

  /**
   * See KVStore. With `signal`, waiting for a lease (etcd unreachable) ends when it aborts; the
   * grant itself goes on for the next caller.
   */
  session(signal?: AbortSignal): Promise<Lease> {
    if (!this.enabled) return Promise.reject(disabled('a session lease'));
    if (this.halt.signal.aborted) return Promise.reject(unavailable('waiting for the session lease', this.halt.signal.reason));
    this.lease ??= this.grant();
    return untilAborted(this.lease, signal ? AbortSignal.any([signal, this.halt.signal]) : this.halt.signal);
  }

  /**
   * The agent began stopping: nobody waits for a lease any more (waiters reject at once, the grant
   * loop ends), so stopping does not wait on an unreachable etcd. Writes under a granted lease go on.
   */
  halting(): void {
    this.halt.abort(new Error('the agent is stopping'));
  }

  /** See KVStore. */
  isCurrent(lease: Lease): boolean {
    return lease === this.current && !lease.revoked();
  }

  /** See KVStore. */
  addMirror(m: MirrorHandle): () => void {
    this.mirrors.add(m);
    return () => void this.mirrors.delete(m);
  }

  /** See KVStore: reads (creating it in a fresh store) the epoch key, and notices a store that was reset. */
  async epoch(): Promise<string> {
    const key = Buffer.from(KEYS.epoch);
    let res;
    try {
      res = await this.etcd.kv.txn({
        compare: [{ key, target: 'Create', result: 'Equal', create_revision: 0 }],
        success: [{ request_put: { key, value: Buffer.from(randomUUID()) } }, { request_range: { key } }],
        failure: [{ request_range: { key } }],
      });
    } catch (err) {
      throw unavailable(`reading ${KEYS.epoch}`, err);
    }
    const value = res.responses.at(-1)?.response_range?.kvs[0]?.value.toString() ?? '';
    const rev = Number(res.header.revision);
    const seen = Math.max(this.highest, ...[...this.mirrors].map((m) => m.status().revision));
    let reset: string | undefined;
    if (this.epochValue !== undefined && value !== this.epochValue) reset = `the store was replaced: its epoch key ${KEYS.epoch} is new (etcd wiped)`;
    else if (rev < seen) reset = `the store went back in time: its revision is ${rev}, ${seen} was seen before (etcd wiped or restored from a backup)`;
    this.epochValue = value;
    this.highest = reset ? rev : Math.max(seen, rev);
    if (reset) void this.onReset(reset);
    return value;
  }

  /** The store was reset: this node's lease is checked (a lost one is granted anew and the keys put again), every mirror listed again. */
  private onReset(reason: string): Promise<void> {
    this.resetting ??= (async () => {
      this.log.warn({ reason }, 'kvstore: the store was reset; checking the session lease and listing every mirror again');
      this.health.degraded(`etcd store reset: ${reason}; listing again`, new Error(reason));
      const lease = this.current;
      // a lease the new store does not know is lost: keepaliveOnce emits 'lost', and onLost grants a new one
      if (lease && !lease.revoked()) await lease.keepaliveOnce({ deadline: Date.now() + CALL_TIMEOUT_MS }).catch(() => undefined);
      // the lease survived (a restored backup knows it) but keys put after the backup are gone: put them again
      if (lease && this.current === lease && !lease.revoked()) this.renewed.next();
      await Promise.all([...this.mirrors].map((m) => m.resync(reason, true)));
    })().finally(() => (this.resetting = undefined));
    return this.resetting;
  }

  /** Grants a lease, retrying (with backoff) until etcd answers or the store is closed. */
  private async grant(): Promise<Lease> {
    const ttl = Math.max(2, Math.round(this.config.kvstoreLeaseTtl / 1000));
    for (let attempt = 0; ; attempt++) {
      if (this.closed || this.halt.signal.aborted) throw unavailable('granting the session lease', new Error('the agent is stopping'));
      const lease = this.etcd.lease(ttl, { autoKeepAlive: true });
      try {
        const id = await lease.grant();
        this.current = lease;
        lease.on('lost', (err) => this.onLost(lease, err));
        this.log.info({ lease: id, ttlSeconds: ttl }, 'kvstore session lease granted');
        return lease;
      } catch (err) {
        lease.release();
        if (attempt === 0) this.log.warn({ err: (err as Error).message }, 'kvstore: cannot grant the session lease yet; retrying');
        await sleep(exponentialBackoff(attempt, 200, 5000), this.halt.signal).catch(() => undefined);
      }
    }
  }

  private onLost(lease: Lease, err: Error): void {
    if (this.closed) return;
    this.log.warn({ err: err.message }, 'kvstore session lease lost; granting a new one and putting this node\'s keys again');
    lease.release();
    const next = this.grant();
    this.lease = next;
    next.then(() => this.renewed.next(), () => undefined);
  }

  /** Probes every endpoint (maintenance status) and reports the result to the health tree. */
  async probe(): Promise<KVStoreStatus> {
    if (!this.etcdConfig) return this.last;
    const eps = this.etcdConfig.endpoints;
    if (this.probes.length === 0) this.probes = eps.map((e) => newClient([e], this.etcdConfig!, 2000));
    const results = await Promise.all(this.probes.map(async (c, i) => {
      try {
        const s = await c.maintenance.status();
        return { ok: true, text: `${eps[i]} - ${s.version}${s.leader === s.header.member_id ? ' (Leader)' : ''}` };
      } catch (err) {
        return { ok: false, text: `${eps[i]} - ${(err as Error).message.split('\n')[0]}` };
      }
    }));
    const up = results.filter((r) => r.ok).length;
    const leases = this.lease ? 1 : 0;
    this.reachable = up > 0;
    // etcd keeps working while a majority of the endpoints answers
    const quorum = up > eps.length / 2;
    if (quorum) await this.checkMirrors();
    const mirrors = [...this.mirrors].map((m) => m.status());
    const trouble = mirrorTrouble(mirrors, quorum, Date.now());
    const msg = `etcd: ${up}/${eps.length} connected, leases=${leases}, lease-ttl=${Math.round(this.config.kvstoreLeaseTtl / 1000)}s: ${results.map((r) => r.text).join('; ')}${mirrors.length ? `; ${describeMirrors(mirrors, this.highest, Date.now())}` : ''}`;
    this.last = { state: quorum && !trouble ? 'Ok' : up > 0 ? 'Warning' : 'Failure', msg };
    if (quorum && !trouble) this.health.ok(msg);
    else this.health.degraded(msg, new Error(!quorum ? (up > 0 ? 'etcd endpoints unreachable: no quorum' : 'etcd unreachable') : trouble));
    return this.last;
  }

  /** The store's epoch and revision, then every mirror against etcd at its revision; a wrong one is listed again. */
  private async checkMirrors(): Promise<void> {
    try {
      await this.epoch();
      await Promise.all([...this.mirrors].map(async (m) => {
        const why = await m.verify();
        if (why) void m.resync(why.replace(WRONG, ''), why.startsWith(WRONG));
      }));
    } catch (err) {
      this.log.debug({ err: (err as Error).message }, 'kvstore: checking the mirrors failed; next probe');
    }
  }

  /** Revokes the session lease (this node's keys go at once) and closes the clients. */
  async close(): Promise<void> {
    this.closed = true;
    const lease = this.lease;
    this.lease = undefined;
    // a lease still being granted (etcd down) is not waited for: the grant loop ends (closed), and
    // a lease granted after all is released when it resolves
    const l = this.current;
    this.current = undefined;
    if (l && !l.revoked()) await l.revoke({ deadline: Date.now() + REVOKE_TIMEOUT_MS }).catch(() => l.release());
    void lease?.then((x) => x !== l && x.release(), () => undefined);
    this.client?.close();
    for (const p of this.probes) p.close();
    this.renewed.complete();
  }
}
