/**
 * Leader election over a coordination.k8s.io Lease, client-go's leaderelection: the holder renews
 * `spec.renewTime` every `retryMs`; the others watch the record and take it over (an update at the
 * resourceVersion they read, so only one wins) once it has not changed for a whole lease duration
 * by their own clock. The holder counts itself leader only until `renewDeadlineMs` (less than the
 * duration) after the start of its last successful renewal, so it stops before anyone can take
 * over; at stop it gives the Lease up (holder cleared), so another takes over at once.
 */
import type { Logger } from '../../hive/logger.js';
import type { IdentityApi, Lease } from './api.js';

/** Timing of the election (client-go's defaults are 15 s, 10 s, 2 s). */
export interface ElectionTiming {
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryMs: number;
}

/** Client-go's proportions for a lease duration: renew deadline 2/3 of it, retry 2/15. */
export function electionTiming(leaseDurationMs: number): ElectionTiming {
  return { leaseDurationMs, renewDeadlineMs: Math.floor((leaseDurationMs * 2) / 3), retryMs: Math.max(50, Math.floor((leaseDurationMs * 2) / 15)) };
}

/** Elects one holder of a Lease; `step()` is one attempt (the cell runs it every `retryMs`). */
export class LeaseElector {
  /** Local time (performance.now) until which this agent is sure to hold the Lease. */
  private validUntil = 0;
  /** The record last seen of another holder, and when it was first seen (local time). */
  private observed?: { readonly rv: string; readonly at: number };
  private leading = false;

  constructor(
    private readonly api: Pick<IdentityApi, 'getLease' | 'createLease' | 'updateLease'>,
    readonly namespace: string,
    readonly name: string,
    /** This agent's name (its node). */
    readonly identity: string,
    readonly timing: ElectionTiming,
    private readonly log: Logger,
    private readonly clock: () => number = () => performance.now(),
    /** What the Lease elects a holder for (in the log lines). */
    readonly purpose = 'identity GC',
  ) {}

  /** Whether this agent holds the Lease now. */
  isLeader(): boolean {
    return this.clock() < this.validUntil;
  }

  private spec(prev: Lease['spec'], acquire: boolean): NonNullable<Lease['spec']> {
    const now = new Date().toISOString().replace('Z', '000Z');
    return {
      holderIdentity: this.identity,
      leaseDurationSeconds: Math.max(1, Math.ceil(this.timing.leaseDurationMs / 1000)),
      acquireTime: acquire ? now : (prev?.acquireTime ?? now),
      renewTime: now,
      leaseTransitions: (prev?.leaseTransitions ?? 0) + (acquire && prev && prev.holderIdentity !== this.identity ? 1 : 0),
    };
  }

  /** One attempt to acquire or renew; returns whether this agent leads after it. */
  async step(signal?: AbortSignal): Promise<boolean> {
    const started = this.clock();
    try {
      const ok = await this.tryStep(started, signal);
      if (ok) this.validUntil = started + this.timing.renewDeadlineMs;
    } catch (err) {
      this.log.debug({ err: (err as Error).message }, `${this.purpose} lease: attempt failed`);
    }
    const now = this.isLeader();
    if (now !== this.leading) {
      this.leading = now;
      if (now) this.log.info({ lease: `${this.namespace}/${this.name}`, holder: this.identity }, `${this.purpose}: became the leader (holds the Lease)`);
      else this.log.info({ lease: `${this.namespace}/${this.name}`, holder: this.identity }, `${this.purpose}: not the leader any more`);
    }
    return now;
  }

  private async tryStep(started: number, signal?: AbortSignal): Promise<boolean> {
    const cur = await this.api.getLease(this.namespace, this.name, signal);
    if (!cur) {
      const made = await this.api.createLease({
        apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: this.name, namespace: this.namespace }, spec: this.spec(undefined, true),
      }, signal);
      return !!made;
    }
    const holder = cur.spec?.holderIdentity ?? '';
    const rv = cur.metadata.resourceVersion ?? '';
    if (holder === this.identity) {
      return !!(await this.api.updateLease({ ...cur, spec: this.spec(cur.spec, false) }, signal));
    }
    if (holder !== '') {
      if (this.observed?.rv !== rv) this.observed = { rv, at: started };
      const duration = Math.max(this.timing.leaseDurationMs, (cur.spec?.leaseDurationSeconds ?? 0) * 1000);
      if (started - this.observed.at < duration) return false;
    }
    const took = await this.api.updateLease({ ...cur, spec: this.spec(cur.spec, true) }, signal);
    if (took) this.log.info({ lease: `${this.namespace}/${this.name}`, previous: holder || null, holder: this.identity }, `${this.purpose}: took the Lease over`);
    return !!took;
  }

  /** Gives the Lease up if this agent holds it (holder cleared), so another takes over at once. */
  async release(signal?: AbortSignal): Promise<void> {
    const was = this.isLeader();
    this.validUntil = 0;
    if (!was) return;
    this.leading = false;
    try {
      const cur = await this.api.getLease(this.namespace, this.name, signal);
      if (cur?.spec?.holderIdentity !== this.identity) return;
      await this.api.updateLease({ ...cur, spec: { ...cur.spec, holderIdentity: '', leaseDurationSeconds: 1, renewTime: new Date().toISOString().replace('Z', '000Z') } }, signal);
      this.log.info({ lease: `${this.namespace}/${this.name}`, holder: this.identity }, `${this.purpose}: gave the Lease up`);
    } catch (err) {
      this.log.warn({ err: (err as Error).message }, `${this.purpose}: could not give the Lease up; another agent takes it over when it expires`);
    }
  }
}
