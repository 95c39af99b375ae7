/**
 * CIDR identities into the ipcache (module `cidr-ipcache`): every identity with a `cidr:` label
 * (allocated for fromCIDR/toCIDR rules) is written to the datapath's ipcache as prefix -> identity,
 * and removed when the identity goes, so packets from/to those prefixes resolve to the CIDR identity
 * the policy map allows or denies (longest prefix: endpoint /32 and /128 entries still win).
 * The identities are listed at start and followed from then on by the observer job `cidr-identities`.
 * A CIDR identity of a host prefix (/32, /128) that is an endpoint's address (the node's endpoint
 * map: this node's endpoints, other nodes' CiliumEndpoints) shares that ipcache key with the
 * endpoint: the endpoint's entry wins (Cilium's ipcache gives endpoint sources precedence over
 * CIDR-derived prefixes). The CIDR identity is then neither written nor deleted there (an except
 * naming a pod must not turn the pod into a CIDR identity, nor its release remove the pod's entry),
 * and written once the address is no endpoint's any more.
 */
import { invoke, module, type DepsValues } from '../../hive/cell.js';
import { JobsToken } from '../../hive/jobs.js';
import { LifecycleToken } from '../../hive/lifecycle.js';
import { LoggerToken } from '../../hive/logger.js';
import { DatapathToken } from '../../datapath/types.js';
import { cidrOfLabel } from '../identity/index.js';
import type { Identity, IdentityChange } from '../identity/types.js';
import { IdentityAllocatorToken } from '../identity/types.js';
import { formatCidr, hostCidr } from '../../lib/addr.js';
import { NamedPortMapToken, type NamedPortMap } from './types.js';

/** The prefix of a CIDR identity, or undefined for any other identity. */
export function cidrOfIdentity(id: Identity): string | undefined {
  for (const l of id.labelSet) {
    const c = cidrOfLabel(l);
    if (c) return formatCidr(c);
  }
  return undefined;
}

/** What the CIDR identities are mirrored with. */
const syncDeps = { alloc: IdentityAllocatorToken, dp: DatapathToken, endpoints: NamedPortMapToken, lc: LifecycleToken, jobs: JobsToken, log: LoggerToken } as const;

/** The address of a host prefix (`10.0.0.5/32` -> `10.0.0.5`), undefined for a shorter one. */
function hostAddress(cidr: string): string | undefined {
  const [addr] = cidr.split('/');
  return addr !== undefined && hostCidr(addr) === cidr ? addr : undefined;
}

/** Whether `cidr` is the host prefix of an address an endpoint has (its entry is the endpoint's). */
function endpointsKey(cidr: string, endpoints: NamedPortMap): boolean {
  const addr = hostAddress(cidr);
  return addr !== undefined && endpoints.hasAddress(addr);
}

/**
 * Mirrors CIDR identities into the ipcache from start to stop: those known at start, then every
 * change (the observer job subscribes at construction, inside the allocator's `next`, and takes
 * changes from the start hook's listing on, as the subscription made there did).
 */
export function syncCIDRIdentities({ alloc, dp, endpoints, lc, jobs, log }: DepsValues<typeof syncDeps>): void {
  let following = false;
  /** Host prefixes of CIDR identities -> identity (to write back when the address is no endpoint's any more). */
  const hosts = new Map<string, number>();
  const upsert = (cidr: string, identity: number) => {
    if (hostAddress(cidr)) hosts.set(cidr, identity);
    if (!endpointsKey(cidr, endpoints)) dp.maps.upsertIPCache({ cidr, identity });
  };
  jobs.observer('cidr-identities', alloc.changes$, (c: IdentityChange) => {
    if (!following) return;
    const cidr = cidrOfIdentity(c.identity);
    if (!cidr) return;
    if (c.kind === 'add') upsert(cidr, c.identity.id);
    else {
      hosts.delete(cidr);
      if (!endpointsKey(cidr, endpoints)) dp.maps.deleteIPCache(cidr);
    }
    log.debug({ cidr, identity: c.identity.id, kind: c.kind }, 'CIDR identity in the ipcache');
  }, { immediate: true, sync: true });
  // an address no endpoint has any more: a CIDR identity of its host prefix takes the key back
  endpoints.onAddresses((c) => {
    if (!following) return;
    for (const addr of c.addresses) {
      const cidr = hostCidr(addr);
      const id = hosts.get(cidr);
      if (id !== undefined && !endpoints.hasAddress(addr)) dp.maps.upsertIPCache({ cidr, identity: id });
    }
  });
  lc.append({
    name: 'cidr-ipcache',
    onStart: () => {
      for (const id of alloc.list()) {
        const cidr = cidrOfIdentity(id);
        if (cidr) upsert(cidr, id.id);
      }
      following = true;
    },
    onStop: () => {
      following = false;
    },
  });
}

/** The cell: add it next to the policy cell (it needs the identity and datapath cells). */
export const cidrIPCacheCell = module(
  'cidr-ipcache',
  'CIDR identities in the ipcache',
  invoke('cidr-ipcache', syncCIDRIdentities, syncDeps),
);
