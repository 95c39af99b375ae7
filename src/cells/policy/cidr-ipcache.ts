/**
 * CIDR identities into the ipcache (module `cidr-ipcache`): every identity with a `cidr:` label
 * (allocated for fromCIDR/toCIDR rules) is written to the datapath's ipcache as prefix -> identity,
 * and removed when the identity goes, so packets from/to those prefixes resolve to the CIDR identity
 * the policy map allows or denies (longest prefix: endpoint /32 and /128 entries still win).
 * The identities are listed at start and followed from then on by the observer job `cidr-identities`.
 * Caveat: a CIDR rule naming exactly an endpoint's host address shares that ipcache key.
 */
import { invoke, module, type DepsValues } from '../../hive/cell.js';
import { JobsToken } from '../../hive/jobs.js';
import { LifecycleToken } from '../../hive/lifecycle.js';
import { LoggerToken } from '../../hive/logger.js';
import { DatapathToken } from '../../datapath/types.js';
import { cidrOfLabel } from '../identity/index.js';
import type { Identity, IdentityChange } from '../identity/types.js';
import { IdentityAllocatorToken } from '../identity/types.js';
import { formatCidr } from '../../lib/addr.js';

/** The prefix of a CIDR identity, or undefined for any other identity. */
export function cidrOfIdentity(id: Identity): string | undefined {
  for (const l of id.labelSet) {
    const c = cidrOfLabel(l);
    if (c) return formatCidr(c);
  }
  return undefined;
}

/** What the CIDR identities are mirrored with. */
const syncDeps = { alloc: IdentityAllocatorToken, dp: DatapathToken, lc: LifecycleToken, jobs: JobsToken, log: LoggerToken } as const;

/**
 * Mirrors CIDR identities into the ipcache from start to stop: those known at start, then every
 * change (the observer job subscribes at construction, inside the allocator's `next`, and takes
 * changes from the start hook's listing on, as the subscription made there did).
 */
export function syncCIDRIdentities({ alloc, dp, lc, jobs, log }: DepsValues<typeof syncDeps>): void {
  let following = false;
  jobs.observer('cidr-identities', alloc.changes$, (c: IdentityChange) => {
    if (!following) return;
    const cidr = cidrOfIdentity(c.identity);
    if (!cidr) return;
    if (c.kind === 'add') dp.maps.upsertIPCache({ cidr, identity: c.identity.id });
    else dp.maps.deleteIPCache(cidr);
    log.debug({ cidr, identity: c.identity.id, kind: c.kind }, 'CIDR identity in the ipcache');
  }, { immediate: true, sync: true });
  lc.append({
    name: 'cidr-ipcache',
    onStart: () => {
      for (const id of alloc.list()) {
        const cidr = cidrOfIdentity(id);
        if (cidr) dp.maps.upsertIPCache({ cidr, identity: id.id });
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
