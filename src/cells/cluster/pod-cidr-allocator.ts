/**
 * cilium-operator's cluster-pool IPAM without an operator (Kubernetes mode, no --kvstore): the one
 * agent holding the Lease `kube-system/cellium-pod-cidr-allocator` gives every CiliumNode without
 * a pod CIDR a free /--cluster-pool-ipv4-mask-size subnet of --cluster-pool-ipv4-cidr in
 * `spec.ipam.podCIDRs`. Each round reads every CiliumNode straight from the apiserver (not a
 * cache), counts every CIDR any of them has as taken, prefers the CIDR a node had before (its
 * annotation) when that is free, and writes at the object's resourceVersion (a node changed
 * meanwhile is done in the next round). A CIDR is never taken from a node, and never given twice;
 * two nodes found with one CIDR (edited by hand) are reported, not repaired.
 */
import type { Logger } from '../../hive/logger.js';
import { PREVIOUS_CIDR_ANNOTATION, podCIDRsOf, type CiliumNode, type CiliumNodeApi } from './ciliumnode.js';
import { subnetOf, subnets } from './pod-cidr.js';

/** What one round did. */
export interface AllocationRound {
  /** node -> CIDR given in this round. */
  readonly allocated: ReadonlyMap<string, string>;
  /** Nodes still without a CIDR (the pool is exhausted, or they changed meanwhile). */
  readonly waiting: readonly string[];
  /** CIDRs held by more than one node. */
  readonly shared: ReadonlyMap<string, readonly string[]>;
}

/** Allocates pod CIDRs while `isLeader()`; see the module comment. */
export class PodCIDRAllocator {
  constructor(
    private readonly api: Pick<CiliumNodeApi, 'list' | 'update'>,
    private readonly pool: string,
    private readonly mask: number,
    private readonly isLeader: () => boolean,
    private readonly log: Logger,
  ) {}

  /** One round (nothing when this agent is not the leader). */
  async round(signal?: AbortSignal): Promise<AllocationRound> {
    const allocated = new Map<string, string>();
    const waiting: string[] = [];
    const shared = new Map<string, string[]>();
    if (!this.isLeader()) return { allocated, waiting, shared };
    const nodes = (await this.api.list(signal)).sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
    const taken = new Map<string, string>();
    for (const n of nodes) {
      for (const c of podCIDRsOf(n)) {
        const holder = taken.get(c);
        if (holder !== undefined) shared.set(c, [...(shared.get(c) ?? [holder]), n.metadata.name]);
        else taken.set(c, n.metadata.name);
      }
    }
    for (const [cidr, holders] of shared) this.log.error({ cidr, nodes: holders }, `pod CIDR ${cidr} is in spec.ipam.podCIDRs of several CiliumNodes (${holders.join(', ')}): their agents refuse to start; fix: remove it from all but one`);
    const free = this.freeSubnets(taken);
    for (const n of nodes) {
      if (podCIDRsOf(n).length > 0) continue;
      const hint = n.metadata.annotations?.[PREVIOUS_CIDR_ANNOTATION];
      const cidr = hint && subnetOf(this.pool, this.mask, hint) && !taken.has(hint) ? hint : free.next().value;
      if (!cidr) {
        waiting.push(n.metadata.name);
        continue;
      }
      // the Lease may have been lost while listing: no write without it
      if (!this.isLeader()) break;
      const done = await this.api.update(withPodCIDR(n, cidr), signal);
      taken.set(cidr, n.metadata.name);
      if (!done) {
        waiting.push(n.metadata.name);
        continue;
      }
      allocated.set(n.metadata.name, cidr);
      this.log.info({ node: n.metadata.name, cidr, pool: this.pool }, 'pod CIDR allocated to the node (CiliumNode spec.ipam.podCIDRs)');
    }
    if (waiting.length > 0 && allocated.size === 0 && !free.next().value) {
      this.log.error({ pool: this.pool, nodes: waiting }, `the cluster pool ${this.pool} has no free /${this.mask} left for ${waiting.join(', ')}: use a larger --cluster-pool-ipv4-cidr or a longer --cluster-pool-ipv4-mask-size, or delete the CiliumNodes of nodes that are gone`);
    }
    return { allocated, waiting, shared };
  }

  /** The pool's subnets nobody holds, in address order (`taken` is read as it grows). */
  private *freeSubnets(taken: ReadonlyMap<string, string>): Generator<string, undefined> {
    for (const c of subnets(this.pool, this.mask)) if (!taken.has(c)) yield c;
    return undefined;
  }
}

function withPodCIDR(n: CiliumNode, cidr: string): CiliumNode {
  return { ...n, spec: { ...(n.spec ?? {}), ipam: { ...(n.spec?.ipam ?? {}), podCIDRs: [cidr] } } };
}
