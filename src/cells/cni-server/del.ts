/**
 * DEL (and the removal GC and a repeated ADD use): remove the attachment's endpoint (which releases
 * its IPs and detaches its own programs), release any IP the ledger still holds for it, and delete
 * the host-side veth (which takes the pod side and the host routes with it) and its journal record.
 * Idempotent: an unknown container, a namespace that is gone or an endpoint already deleted all end
 * in success; containerd sends DEL twice per pod. A chained attachment's interface belongs to the
 * previous plugin and is left alone, as is an interface another endpoint holds.
 */
import type { CniDeps } from './deps.js';
import { ioFailure } from './errors.js';
import { attachmentKey } from './ledger.js';
import { interfaceOwner, ipHolder } from './owners.js';
import { hostIfName } from './plumbing.js';

/** Releases the ledger's IPs of an attachment that no endpoint holds. */
export function releaseLedgerIPs(d: CniDeps, attachment: string): string[] {
  const released: string[] = [];
  for (const e of d.ledger.of(attachment)) {
    const held = ipHolder(d.manager, e.ip);
    if (!held && d.ipam.ownerOf(e.ip) === e.owner && d.ipam.release(e.ip)) released.push(e.ip);
    if (!held) d.ledger.forget(e.ip);
  }
  return released;
}

/** Removes everything of one attachment; resolves when nothing of it is left. */
export async function removeAttachment(d: CniDeps, containerId: string, ifName: string, reason: string): Promise<void> {
  const key = attachmentKey(containerId, ifName);
  const ours = hostIfName(containerId, ifName);
  const ep = d.manager.lookup(`cni-attachment-id:${key}`);
  const hostName = ep?.ifName ?? ours;
  if (ep) {
    try {
      await d.endpoints.deleteEndpoint({}, String(ep.id));
      d.log.info({ endpointID: ep.id, containerID: containerId, ifName, reason }, 'CNI: endpoint deleted');
    } catch (err) {
      if ((err as { code?: string }).code !== 'not-found') throw err;
    }
  }
  releaseLedgerIPs(d, key);
  if (hostName !== ours) return;
  const holder = interfaceOwner(d.manager, ours);
  if (holder) {
    d.log.warn({ containerID: containerId, ifName, hostIfName: ours, endpointID: holder.id, reason }, 'CNI: the host interface belongs to another endpoint; left in place');
    return;
  }
  try {
    await d.net.inHost((h) => h.deleteLink(ours));
  } catch (err) {
    throw ioFailure(`deleting ${ours}`, err);
  }
  await d.journal.remove(ours);
}
