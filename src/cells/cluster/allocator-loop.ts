/**
 * Runs the pod CIDR allocator's Lease election and, on the holder, its rounds, every retry period
 * from the start hook `pod-cidr-allocator` to stop. Not a hive job: jobs start after every start
 * hook, and the agents' own start (the hook `cluster-pod-cidr`, waiting for this node's CIDR) needs
 * the allocator running, the first agent of a cluster being its own allocator. At stop the Lease is
 * given up, so another agent takes over at once.
 */
import type { Health } from '../../hive/health.js';
import type { Logger } from '../../hive/logger.js';
import { sleep } from '../../hive/timeout.js';
import type { LeaseElector } from '../k8s-identity/index.js';
import type { PodCIDRAllocator } from './pod-cidr-allocator.js';

/** The loop; see the module comment. */
export class AllocatorLoop {
  private readonly abort = new AbortController();
  private loop?: Promise<void>;

  constructor(
    private readonly elector: LeaseElector,
    private readonly allocator: PodCIDRAllocator,
    private readonly health: Health,
    private readonly log: Logger,
  ) {}

  /** Starts the loop (returns at once). */
  start(): void {
    this.loop ??= this.run();
  }

  /** One election step and, when leading, one round; the health says which. */
  async once(signal?: AbortSignal): Promise<void> {
    const leading = await this.elector.step(signal);
    if (!leading) return this.health.ok('follower: another agent allocates pod CIDRs');
    const r = await this.allocator.round(signal);
    if (r.shared.size > 0) this.health.degraded(`leader: pod CIDR(s) ${[...r.shared.keys()].join(', ')} held by several CiliumNodes`);
    else if (r.waiting.length > 0) this.health.degraded(`leader: ${r.waiting.length} CiliumNode(s) still without a pod CIDR (${r.waiting.join(', ')})`);
    else this.health.ok(`leader: allocates pod CIDRs (Lease ${this.elector.namespace}/${this.elector.name})`);
  }

  private async run(): Promise<void> {
    const signal = this.abort.signal;
    let last = '';
    while (!signal.aborted) {
      try {
        await this.once(signal);
        last = '';
      } catch (err) {
        if (signal.aborted) return;
        const msg = (err as Error).message;
        this.health.degraded(`round failed, retrying: ${msg}`);
        if (msg !== last) this.log.warn({ err: msg }, 'pod CIDR allocator: round failed; retrying');
        last = msg;
      }
      await sleep(this.elector.timing.retryMs, signal).catch(() => undefined);
    }
  }

  /** Stops the loop and gives the Lease up. */
  async stop(): Promise<void> {
    this.abort.abort();
    await this.loop;
    await this.elector.release();
  }
}
