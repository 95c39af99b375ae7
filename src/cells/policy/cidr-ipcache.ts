/**
 * CIDR identities into the ipcache (module `cidr-ipcache`): every identity with a `cidr:` label
 * (allocated for fromCIDR/toCIDR rules) is written to the datapath's ipcache as prefix -> identity,
 * and removed when the identity goes, so packets from/to those prefixes resolve to the CIDR identity
 * the policy map allows or denies (longest prefix: endpoint /32 and /128 entries still win).
 * Caveat: a CIDR rule naming exactly an endpoint's host address shares that ipcache key.
 */
import { invoke, module } from '../../hive/cell.js';
import { LifecycleToken, type Lifecycle } from '../../hive/lifecycle.js';
import { LoggerToken, type Logger } from '../../hive/logger.js';
import { DatapathToken, type Datapath } from '../../datapath/types.js';
import { cidrOfLabel } from '../identity/index.js';
import type { Identity, IdentityAllocator } from '../identity/types.js';
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

/** Mirrors CIDR identities into the ipcache from start to stop. */
export function syncCIDRIdentities(alloc: IdentityAllocator, dp: Datapath, lc: Lifecycle, log: Logger): void {
  let stop: (() => void) | undefined;
  lc.append({
    name: 'cidr-ipcache',
    onStart: () => {
      for (const id of alloc.list()) {
        const cidr = cidrOfIdentity(id);
        if (cidr) dp.maps.upsertIPCache({ cidr, identity: id.id });
      }
      const sub = alloc.changes$.subscribe((c) => {
        const cidr = cidrOfIdentity(c.identity);
        if (!cidr) return;
        if (c.kind === 'add') dp.maps.upsertIPCache({ cidr, identity: c.identity.id });
        else dp.maps.deleteIPCache(cidr);
        log.debug({ cidr, identity: c.identity.id, kind: c.kind }, 'CIDR identity in the ipcache');
      });
      stop = () => sub.unsubscribe();
    },
    onStop: () => stop?.(),
  });
}

/** The cell: add it next to the policy cell (it needs the identity and datapath cells). */
export const cidrIPCacheCell = module(
  'cidr-ipcache',
  'CIDR identities in the ipcache',
  invoke('cidr-ipcache', syncCIDRIdentities, IdentityAllocatorToken, DatapathToken, LifecycleToken, LoggerToken),
);
