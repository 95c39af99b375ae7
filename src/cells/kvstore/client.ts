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
import { kvstoreOpt, type KVStoreConfig } from './config.js';
import { etcd3 } from './etcd3-lib.js';
import { readEtcdConfig, type EtcdConfig } from './etcd-config.js';
import { badFlag, disabled, unavailable } from './errors.js';
import type { KVStore, KVStoreStatus } from './types.js';

/** Deadline of one unary etcd call. */
export const CALL_TIMEOUT_MS = 5000;

function newClient(hosts: readonly string[], cfg: EtcdConfig, timeoutMs: number): Etcd3 {
  const { Etcd3: Client } = etcd3();
  return new Client({
    hosts: [...hosts],
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

  /** See KVStore. */
  session(): Promise<Lease> {
    if (!this.enabled) return Promise.reject(disabled('a session lease'));
    this.lease ??= this.grant();
    return this.lease;
  }

  /** Grants a lease, retrying (with backoff) until etcd answers or the store is closed. */
  private async grant(): Promise<Lease> {
    const ttl = Math.max(2, Math.round(this.config.kvstoreLeaseTtl / 1000));
    for (let attempt = 0; ; attempt++) {
      if (this.closed) throw unavailable('granting the session lease', new Error('the kvstore is closed'));
      const lease = this.etcd.lease(ttl, { autoKeepAlive: true });
      try {
        const id = await lease.grant();
        lease.on('lost', (err) => this.onLost(lease, err));
        this.log.info({ lease: id, ttlSeconds: ttl }, 'kvstore session lease granted');
        return lease;
      } catch (err) {
        lease.release();
        if (attempt === 0) this.log.warn({ err: (err as Error).message }, 'kvstore: cannot grant the session lease yet; retrying');
        await new Promise((r) => setTimeout(r, exponentialBackoff(attempt, 200, 5000)));
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
    const msg = `etcd: ${up}/${eps.length} connected, leases=${leases}, lease-ttl=${Math.round(this.config.kvstoreLeaseTtl / 1000)}s: ${results.map((r) => r.text).join('; ')}`;
    this.reachable = up > 0;
    // etcd keeps working while a majority of the endpoints answers
    const quorum = up > eps.length / 2;
    this.last = { state: quorum ? 'Ok' : up > 0 ? 'Warning' : 'Failure', msg };
    if (quorum) this.health.ok(msg);
    else this.health.degraded(msg, new Error(up > 0 ? 'etcd endpoints unreachable: no quorum' : 'etcd unreachable'));
    return this.last;
  }

  /** Revokes the session lease (this node's keys go at once) and closes the clients. */
  async close(): Promise<void> {
    this.closed = true;
    const lease = this.lease;
    this.lease = undefined;
    if (lease) {
      const l = await lease.catch(() => undefined);
      if (l) await l.revoke().catch(() => l.release());
    }
    this.client?.close();
    for (const p of this.probes) p.close();
    this.renewed.complete();
  }
}
