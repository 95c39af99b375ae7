/**
 * Pod CIDRs from the cluster pool (`--cluster-pool-ipv4-cidr`, kvstore mode): each node claims one
 * `/--cluster-pool-ipv4-mask-size` subnet under `cilium/state/podcidrs/v1/<cluster>/<net>_<len>` ->
 * node name, create-only and leased with the session (so a node that is gone releases it one TTL
 * later). At start the node takes back a claim of its own, else the CIDR it had before (recorded in
 * `<state-dir>/pod-cidr.json`, so a restart keeps its pods' addresses), else the first free subnet.
 * After a new session lease the claim is put again (`onSessionRenewed`, called by the cluster cell's
 * observer job `pod-cidr-reclaim`).
 */
import { readFile } from 'node:fs/promises';
import type { Logger } from '../../hive/logger.js';
import { writeFileAtomic } from '../../lib/atomic-file.js';
import { cidrContains, formatCidr, parseCidr } from '../../lib/addr.js';
import type { KVStore } from '../kvstore/index.js';
import { badMaskSize, poolExhausted } from './errors.js';

/** Where pod CIDR claims live. */
export const PODCIDR_PREFIX = 'cilium/state/podcidrs/v1/';

/** The subnets of `pool` with prefix `mask`, in address order. */
export function* subnets(pool: string, mask: number): Generator<string> {
  const c = parseCidr(pool);
  if (mask < c.prefix) throw badMaskSize(mask, c.prefix);
  const count = 1n << BigInt(mask - c.prefix);
  const step = 1n << BigInt(c.bits - mask);
  for (let i = 0n; i < count; i++) yield formatCidr({ family: c.family, network: c.network + i * step, prefix: mask, bits: c.bits });
}

/** Whether `cidr` is one of the pool's subnets of that mask. */
export function subnetOf(pool: string, mask: number, cidr: string): boolean {
  try {
    const p = parseCidr(pool);
    const c = parseCidr(cidr);
    return c.family === p.family && c.prefix === mask && cidrContains(p, c);
  } catch {
    return false;
  }
}

/** The pod CIDR recorded in the state file (`{"cidr"}`), or undefined. */
export async function previousPodCIDR(stateFile: string): Promise<string | undefined> {
  try {
    const d = JSON.parse(await readFile(stateFile, 'utf8')) as { cidr?: unknown };
    return typeof d.cidr === 'string' ? d.cidr : undefined;
  } catch {
    return undefined;
  }
}

/** Records the pod CIDR in the state file (kept across restarts). */
export async function recordPodCIDR(stateFile: string, cidr: string): Promise<void> {
  await writeFileAtomic(stateFile, `${JSON.stringify({ cidr })}\n`);
}

/** Claims this node's pod CIDR; see the module comment. */
export class PodCIDRClaimer {
  private cidr?: string;
  private stopped = false;

  constructor(
    private readonly kv: KVStore,
    private readonly pool: string,
    private readonly mask: number,
    private readonly stateFile: string,
    private readonly log: Logger,
  ) {}

  private prefix(): string {
    return `${PODCIDR_PREFIX}${this.kv.config.clusterName}/`;
  }

  private keyOf(cidr: string): string {
    return `${this.prefix()}${cidr.replace('/', '_')}`;
  }

  /** The claimed CIDR (after claim()). */
  current(): string | undefined {
    return this.cidr;
  }

  /** Claims a CIDR (see the module comment); kept across lease renewals by `onSessionRenewed`. */
  async claim(): Promise<string> {
    const me = this.kv.config.nodeName;
    const taken = await this.kv.etcd.getAll().prefix(this.prefix()).strings();
    const mine = Object.entries(taken).find(([, node]) => node === me)?.[0];
    const before = await this.previous();
    const inPool = (c: string): boolean => subnetOf(this.pool, this.mask, c);
    const candidates = [
      ...(mine ? [mine.slice(this.prefix().length).replace('_', '/')] : []),
      ...(before ? [before] : []),
    ].filter(inPool);
    candidates.push(...subnets(this.pool, this.mask));
    const lease = await this.kv.session();
    const leaseId = await lease.grant();
    for (const cidr of candidates) {
      const key = this.keyOf(cidr);
      if (taken[key] !== undefined && taken[key] !== me) continue;
      // ours already, or free: put it with our lease, create-only unless it names us
      const res = await this.kv.etcd.if(key, 'Create', '==', 0).then(this.kv.etcd.put(key).value(me).lease(leaseId)).else(this.kv.etcd.get(key)).commit();
      const holder = res.succeeded ? me : res.responses[0]?.response_range.kvs[0]?.value.toString();
      if (holder === me && !res.succeeded) await lease.put(key).value(me);
      if (holder !== me) continue;
      this.cidr = cidr;
      await recordPodCIDR(this.stateFile, cidr);
      this.log.info({ cidr, pool: this.pool }, 'pod CIDR claimed from the cluster pool');
      return cidr;
    }
    throw poolExhausted(this.pool, this.mask);
  }

  /** The session lease was renewed: once a CIDR was claimed and until stop, it is claimed again (see reclaim). */
  onSessionRenewed(): void {
    if (this.stopped || !this.cidr) return;
    void this.reclaim().catch((err: Error) => this.log.warn({ err: err.message }, 'could not claim the pod CIDR again'));
  }

  /**
   * After a new session lease: claims the same CIDR again (its pods keep their addresses). Another
   * node that took it while this node's lease had run out keeps it; that is logged as an error
   * naming the fix, and this node goes on with its pool (a restart claims a free CIDR).
   */
  private async reclaim(): Promise<void> {
    const cidr = this.cidr;
    if (!cidr) return;
    const me = this.kv.config.nodeName;
    const key = this.keyOf(cidr);
    const lease = await this.kv.session();
    const res = await this.kv.etcd.if(key, 'Create', '==', 0).then(this.kv.etcd.put(key).value(me).lease(await lease.grant())).else(this.kv.etcd.get(key)).commit();
    const holder = res.succeeded ? me : res.responses[0]?.response_range.kvs[0]?.value.toString();
    if (holder === me) {
      if (!res.succeeded) await lease.put(key).value(me);
      this.log.info({ cidr }, 'pod CIDR claimed again under the new session lease');
      return;
    }
    this.log.error({ cidr, holder }, `pod CIDR ${cidr} was claimed by ${holder} while this node's lease had run out: its pods' addresses may clash; restart this agent (its pods too) to claim a free CIDR`);
  }

  private previous(): Promise<string | undefined> {
    return previousPodCIDR(this.stateFile);
  }

  /** Stops re-claiming on lease renewals. */
  stop(): void {
    this.stopped = true;
  }
}
