/** Which identities are "world" (outside the cluster): Cilium's world identities and CIDR identities. */
import { ReservedIdentity } from '../../datapath/types.js';
import type { Identity } from '../identity/types.js';

const WORLD = new Set<number>([ReservedIdentity.world, ReservedIdentity.worldIPv4, ReservedIdentity.worldIPv6]);

/** Whether an identity is outside the cluster: world, world-ipv4, world-ipv6 or carries `reserved:world` (CIDR identities). */
export function isWorldIdentity(id: Identity): boolean {
  return WORLD.has(id.id) || id.labelSet.some((l) => l.source === 'reserved' && l.key === 'world');
}
