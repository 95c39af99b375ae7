/**
 * Identity GC in CRD mode, cilium-operator's (operator/identitygc/crd_gc.go), run by the one agent
 * that holds the GC Lease (lease.ts). Each round: an identity a CiliumEndpoint names
 * (status.identity.id) is alive; one that no CiliumEndpoint names and has no mark gets the mark
 * `io.cilium.heartbeat` (the time, RFC 3339; a JSON patch that tests the resourceVersion it was
 * seen unused at); one marked at least the grace period (--identity-heartbeat-timeout) ago is
 * deleted with uid and resourceVersion preconditions, so one an agent took in between (which
 * removes the mark, changing its version) survives. Agents remove the mark of every identity they
 * hold (backend.ts), so an identity is deleted only when no CiliumEndpoint names it and no agent
 * answered for it during the whole grace period. A label set's second number is treated the same.
 */
import type { Logger } from '../../hive/logger.js';
import type { CiliumEndpoint } from '../k8s-endpoint-sync/index.js';
import { HEARTBEAT_ANNOTATION, type CiliumIdentity, type IdentityApi } from './api.js';
import { idOf } from './objects.js';

/** One round's counts. */
export interface GCRound {
  /** Not the leader (or lost the lease during the round): nothing more was written. */
  readonly skipped: boolean;
  readonly alive: number;
  readonly marked: number;
  readonly deleted: number;
  /** Marks removed from identities a CiliumEndpoint names again. */
  readonly unmarked: number;
}

/** What a round reads and writes through. */
export interface GCDeps {
  readonly api: Pick<IdentityApi, 'mark' | 'unmark' | 'delete'>;
  /** The cluster's CiliumIdentities (the Resource's cache, synced). */
  identities(): Promise<readonly CiliumIdentity[]>;
  /** Every CiliumEndpoint of the cluster. */
  endpoints(signal?: AbortSignal): Promise<readonly CiliumEndpoint[]>;
  /** Whether this agent holds the GC Lease now (checked before every write). */
  isLeader(): boolean;
  /** Grace period between the mark and the deletion (ms). */
  readonly graceMs: number;
  /** This agent's name in the logs. */
  readonly holder: string;
  readonly log: Logger;
  readonly now?: () => number;
}

/** Runs GC rounds; see the module comment. */
export class CrdIdentityGC {
  constructor(private readonly d: GCDeps) {}

  /** One round. */
  async round(signal?: AbortSignal): Promise<GCRound> {
    const counts = { alive: 0, marked: 0, deleted: 0, unmarked: 0 };
    if (!this.d.isLeader()) return { skipped: true, ...counts };
    const [identities, endpoints] = await Promise.all([this.d.identities(), this.d.endpoints(signal)]);
    const used = new Set(endpoints.map((e) => e.status?.identity?.id).filter((id): id is number => typeof id === 'number'));
    const now = (this.d.now ?? Date.now)();
    for (const obj of identities) {
      if (signal?.aborted) break;
      const id = idOf(obj);
      if (id === undefined) continue;
      const name = obj.metadata.name;
      const mark = obj.metadata.annotations?.[HEARTBEAT_ANNOTATION];
      if (used.has(id)) {
        counts.alive++;
        if (mark !== undefined) {
          if (!this.d.isLeader()) return { skipped: true, ...counts };
          if (await this.d.api.unmark(name, mark, signal)) counts.unmarked++;
        }
        continue;
      }
      if (!this.d.isLeader()) return { skipped: true, ...counts };
      if (mark === undefined) {
        if (await this.d.api.mark(name, obj.metadata.resourceVersion ?? '', !!obj.metadata.annotations, new Date(now).toISOString(), signal)) counts.marked++;
        continue;
      }
      const at = Date.parse(mark);
      // a mark that is not a time (hand-written) counts from now: marked again
      if (!Number.isFinite(at)) {
        if (await this.d.api.unmark(name, mark, signal)) counts.unmarked++;
        continue;
      }
      if (now - at < this.d.graceMs) {
        counts.alive++;
        continue;
      }
      if (await this.d.api.delete(name, obj.metadata.uid ?? '', obj.metadata.resourceVersion ?? '', signal)) {
        counts.deleted++;
        this.d.log.info({ id, labels: obj['security-labels'], markedAt: mark, gc: this.d.holder }, 'identity GC: unused identity deleted');
      }
    }
    if (counts.marked || counts.deleted) this.d.log.info({ ...counts, gc: this.d.holder }, 'identity GC round');
    return { skipped: false, ...counts };
  }
}
