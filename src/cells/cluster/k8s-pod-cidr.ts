/**
 * This node's pod CIDR from its CiliumNode (Kubernetes mode with --cluster-pool-ipv4-cidr, no
 * --kvstore), as a Cilium agent in cluster-pool IPAM mode waits for cilium-operator: the agent
 * makes sure its CiliumNode exists (with the CIDR it had before, from `<state-dir>/pod-cidr.json`,
 * as a hint), then waits, bounded, for the elected allocator to write `spec.ipam.podCIDRs`. The CIDR
 * is used only when it is a /mask subnet of the pool and no other CiliumNode has it (never two
 * nodes one CIDR): otherwise the agent does not start, with an error naming the field and the fix.
 * The CIDR stays the node's for as long as its CiliumNode exists, so a restart keeps it.
 */
import type { Logger } from '../../hive/logger.js';
import { sleep } from '../../hive/timeout.js';
import { podCIDRsOf, type CiliumNodeApi } from './ciliumnode.js';
import { ClusterError, podCIDRNotInPool, podCIDRShared, podCIDRTimeout } from './errors.js';
import { ensureOwnCiliumNode } from './own-ciliumnode.js';
import { previousPodCIDR, recordPodCIDR, subnetOf } from './pod-cidr.js';
import type { PodCIDR } from './types.js';

/** How often the CiliumNode is read while waiting for its CIDR. */
const POLL_MS = 250;

/** What the wait needs to know. */
export interface K8sPodCIDROptions {
  readonly node: string;
  readonly ipv4: string;
  readonly pool: string;
  readonly mask: number;
  readonly stateFile: string;
  /** How long to wait for the allocator (ms). */
  readonly waitMs: number;
}

/** Waits for this node's CIDR in its CiliumNode; see the module comment. */
export class K8sPodCIDR implements PodCIDR {
  private cidr?: string;

  constructor(
    private readonly api: CiliumNodeApi,
    private readonly opts: K8sPodCIDROptions,
    private readonly log: Logger,
  ) {}

  /** See PodCIDR. */
  current(): string | undefined {
    return this.cidr;
  }

  /** Ensures the CiliumNode and waits for its CIDR (bounded); throws naming the fix. */
  async claim(signal?: AbortSignal): Promise<string> {
    const { node, ipv4, stateFile, waitMs } = this.opts;
    const before = await previousPodCIDR(stateFile);
    const deadline = performance.now() + waitMs;
    let written = false;
    let lastErr: Error | undefined;
    let logged = false;
    for (;;) {
      let cidr: string | undefined;
      try {
        // the CRD may still be registering (404), the apiserver starting: tried again until the deadline
        if (!written) await ensureOwnCiliumNode(this.api, { name: node, ipv4, ...(before ? { previousPodCIDR: before } : {}) }, this.log, signal);
        written = true;
        const cn = await this.api.get(node, signal);
        if (!cn) written = false;
        cidr = cn ? podCIDRsOf(cn)[0] : undefined;
        if (cidr) return await this.accept(cidr, before, signal);
      } catch (err) {
        if (err instanceof ClusterError && err.code === 'pod-cidr') throw err;
        if (err instanceof ClusterError && err.message !== lastErr?.message) this.log.warn({ err: err.message }, 'waiting for the pod CIDR: the apiserver did not answer as expected; trying again');
        lastErr = err as Error;
      }
      if (performance.now() >= deadline) throw podCIDRTimeout(node, waitMs, lastErr);
      if (!logged && written) this.log.info({ node }, 'waiting for the pod CIDR allocator to write spec.ipam.podCIDRs of this node\'s CiliumNode');
      logged ||= written;
      await sleep(POLL_MS, signal);
    }
  }

  /** Checks the allocated CIDR (in the pool, no other node's) and records it. */
  private async accept(cidr: string, before: string | undefined, signal?: AbortSignal): Promise<string> {
    const { node, pool, mask, stateFile } = this.opts;
    if (!subnetOf(pool, mask, cidr)) throw podCIDRNotInPool(node, cidr, pool, mask);
    const others = (await this.api.list(signal)).filter((o) => o.metadata.name !== node && podCIDRsOf(o).includes(cidr)).map((o) => o.metadata.name);
    if (others.length > 0) throw podCIDRShared(node, cidr, others);
    if (before && before !== cidr) this.log.warn({ before, cidr }, 'this node\'s pod CIDR changed (its CiliumNode was recreated and the old CIDR was taken): restored endpoints outside it lose their addresses');
    await recordPodCIDR(stateFile, cidr);
    this.cidr = cidr;
    this.log.info({ cidr, pool }, 'pod CIDR allocated from the cluster pool (CiliumNode spec.ipam.podCIDRs)');
    return cidr;
  }
}
