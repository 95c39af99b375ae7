/**
 * Host interfaces the CNI server created that no endpoint holds: at start, once the endpoints are
 * restored (nothing is in flight then, so an ADD that journalled an interface without leaving an
 * endpoint died with the previous agent), and at every CNI GC (for attachments the runtime no
 * longer lists). Each goes with the IPs recorded for it that no endpoint holds, and its record.
 */
import type { CniDeps } from './deps.js';
import { releaseLedgerIPs } from './del.js';
import type { JournalEntry } from './journal.js';
import { attachmentKey } from './ledger.js';
import { interfaceOwner, ipHolder } from './owners.js';

/** What one sweep removed. */
export interface OrphanOutcome {
  /** Host interfaces whose record went (the interface deleted when it still existed). */
  readonly interfaces: string[];
  readonly ips: string[];
}

/** Removes one orphan: its interface, its IPs no endpoint holds, then its record (kept when the interface could not be deleted). */
async function removeOrphan(d: CniDeps, e: JournalEntry, reason: string, out: OrphanOutcome): Promise<void> {
  const r = e.record;
  let existed: boolean;
  try {
    existed = await d.net.inHost((h) => h.deleteLink(e.hostName));
  } catch (err) {
    d.log.warn({ ifName: e.hostName, err: (err as Error).message, reason }, 'could not delete a host interface no endpoint holds; retried at the next GC');
    return;
  }
  const ips: string[] = [];
  for (const { ip, owner } of r?.ips ?? []) {
    if (!ipHolder(d.manager, ip) && d.ipam.ownerOf(ip) === owner && d.ipam.release(ip)) ips.push(ip);
  }
  if (r) ips.push(...releaseLedgerIPs(d, attachmentKey(r.containerId, r.ifName)));
  await d.journal.remove(e.hostName);
  out.interfaces.push(e.hostName);
  out.ips.push(...ips);
  d.log.info(
    { ifName: e.hostName, deleted: existed, containerID: r?.containerId, containerIfName: r?.ifName, releasedIPs: ips, ...(e.error ? { record: e.error } : {}), reason },
    'removed a host interface that no endpoint holds',
  );
}

/**
 * Removes every journalled host interface that no endpoint holds and no command is working on,
 * except those of the attachments in `keep` (GC's valid attachments). Each removal runs under its
 * attachment's lock and checks again there.
 */
export async function removeOrphans(d: CniDeps, reason: string, keep: ReadonlySet<string> = new Set()): Promise<OrphanOutcome> {
  const out: OrphanOutcome = { interfaces: [], ips: [] };
  for (const e of await d.journal.list()) {
    const key = e.record ? attachmentKey(e.record.containerId, e.record.ifName) : undefined;
    if (key && (keep.has(key) || d.ledger.busy(key))) continue;
    if (interfaceOwner(d.manager, e.hostName)) continue;
    if (!key) {
      await removeOrphan(d, e, reason, out);
      continue;
    }
    await d.ledger.withLock(key, async () => {
      if (!interfaceOwner(d.manager, e.hostName)) await removeOrphan(d, e, reason, out);
    });
  }
  return out;
}
