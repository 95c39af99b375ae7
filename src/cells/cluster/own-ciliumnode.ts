/**
 * This node's CiliumNode, written by its agent (Kubernetes mode without --kvstore): created when
 * missing with `spec.addresses` [{InternalIP}], and `spec.ipam.podCIDRs` only when the node's pool
 * is its own fixed --ipv4-range; with the cluster pool the elected allocator writes the CIDR and the
 * agent never does (it may only leave the hint annotation of the CIDR it had before). Where the
 * node has a Kubernetes Node, the CiliumNode is owned by it (metadata.ownerReferences, as Cilium's
 * agent writes it), so deleting the Node deletes the CiliumNode. An existing object keeps
 * everything else (its pod CIDR above all); a changed address or owner is updated at the object's
 * resourceVersion (a 409 reads it again).
 */
import type { Logger } from '../../hive/logger.js';
import { PREVIOUS_CIDR_ANNOTATION, nodeOwnerOf, nodeOwnerReference, podCIDRsOf, type CiliumNode, type CiliumNodeApi } from './ciliumnode.js';
import { nodeRequestFailed } from './errors.js';

/** What this node's CiliumNode must say. */
export interface OwnNodeSpec {
  readonly name: string;
  readonly ipv4: string;
  /** The fixed pool (--ipv4-range) written as spec.ipam.podCIDRs; undefined: the allocator writes it. */
  readonly fixedPodCIDR?: string;
  /** The CIDR this node had before (state dir), as a hint to the allocator. */
  readonly previousPodCIDR?: string;
  /** The uid of the node's Kubernetes Node (the owner); undefined: there is no Node (the owner is left as it is). */
  readonly nodeUid?: string;
}

/** How often a conflicting update is tried again before giving up. */
const ATTEMPTS = 10;

/** Creates or updates this node's CiliumNode (see the module comment); returns the object as stored. */
export async function ensureOwnCiliumNode(api: CiliumNodeApi, want: OwnNodeSpec, log: Logger, signal?: AbortSignal): Promise<CiliumNode> {
  const addresses = [{ type: 'InternalIP', ip: want.ipv4 }];
  const owner = want.nodeUid ? nodeOwnerReference(want.name, want.nodeUid) : undefined;
  for (let i = 0; i < ATTEMPTS; i++) {
    const cur = await api.get(want.name, signal);
    if (!cur) {
      const made = await api.create({
        metadata: { name: want.name, ...(owner ? { ownerReferences: [owner] } : {}), ...(want.previousPodCIDR ? { annotations: { [PREVIOUS_CIDR_ANNOTATION]: want.previousPodCIDR } } : {}) },
        spec: { addresses, ipam: { podCIDRs: want.fixedPodCIDR ? [want.fixedPodCIDR] : [] } },
      }, signal);
      if (made) {
        log.info({ node: want.name, ip: want.ipv4, podCIDR: want.fixedPodCIDR }, 'CiliumNode of this node created');
        return made;
      }
      continue;
    }
    const sameAddr = JSON.stringify(cur.spec?.addresses ?? []) === JSON.stringify(addresses);
    const cidrs = podCIDRsOf(cur);
    const sameCidr = !want.fixedPodCIDR || (cidrs.length === 1 && cidrs[0] === want.fixedPodCIDR);
    const sameOwner = !owner || nodeOwnerOf(cur)?.uid === owner.uid;
    if (sameAddr && sameCidr && sameOwner) return cur;
    const ipam = { ...(cur.spec?.ipam ?? {}), ...(want.fixedPodCIDR ? { podCIDRs: [want.fixedPodCIDR] } : {}) };
    const others = (cur.metadata.ownerReferences ?? []).filter((r) => r !== nodeOwnerOf(cur));
    const metadata = owner ? { ...cur.metadata, ownerReferences: [...others, owner] } : cur.metadata;
    const updated = await api.update({ ...cur, metadata, spec: { ...(cur.spec ?? {}), addresses, ipam } }, signal);
    if (updated) {
      log.info({ node: want.name, ip: want.ipv4, podCIDR: want.fixedPodCIDR ?? podCIDRsOf(updated)[0] }, 'CiliumNode of this node updated');
      return updated;
    }
  }
  throw nodeRequestFailed('update', want.name, 409, `still changing after ${ATTEMPTS} attempts`);
}
