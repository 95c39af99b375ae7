/**
 * GC (CNI 1.1): removes every attachment the runtime no longer lists in `cni.dev/valid-attachments`:
 * endpoints made by CNI ADD (they carry a CNI attachment), host interfaces an ADD created that no
 * endpoint holds (an ADD a crash interrupted), and IPs an ADD allocated that no endpoint holds.
 * Attachments with a command in progress are left alone. The IPAM plugin of delegated IPAM gets the
 * GC too (see delegatedGc), once the endpoints are gone.
 */
import type { CniDeps } from './deps.js';
import { delegatedGc, type DelegatedAttachment } from './delegated-ipam.js';
import { invalidConfig } from './errors.js';
import { attachmentKey } from './ledger.js';
import type { ParsedCall } from './netconf.js';
import { removeAttachment } from './del.js';
import { removeOrphans } from './orphans.js';
import { ipHolder } from './owners.js';

/** What one GC removed. */
export interface GcOutcome {
  readonly endpoints: string[];
  /** Host interfaces no endpoint held. */
  readonly interfaces: string[];
  readonly ips: string[];
}

/** Runs GC; each stale attachment is removed under its lock. */
export async function runGc(d: CniDeps, call: ParsedCall): Promise<GcOutcome> {
  const valid = call.conf.validAttachments;
  if (!valid) throw invalidConfig('cni.dev/valid-attachments', 'is required for GC');
  const delegated: DelegatedAttachment[] = [];
  const keep = new Set(valid.map((a) => attachmentKey(a.containerID, a.ifname)));
  const out: GcOutcome = { endpoints: [], interfaces: [], ips: [] };
  for (const ep of d.manager.getEndpoints()) {
    if (!ep.containerId || !ep.containerIfName) continue;
    const key = attachmentKey(ep.containerId, ep.containerIfName);
    if (keep.has(key) || d.ledger.busy(key)) continue;
    const { containerId, containerIfName } = ep;
    if (ep.ipamSource?.startsWith('delegated-plugin:')) delegated.push({ containerId, ifName: containerIfName });
    await d.ledger.withLock(key, () => removeAttachment(d, containerId, containerIfName, 'CNI GC: not a valid attachment'));
    out.endpoints.push(key);
  }
  const orphans = await removeOrphans(d, 'CNI GC: not a valid attachment', keep);
  out.interfaces.push(...orphans.interfaces);
  out.ips.push(...orphans.ips);
  for (const e of d.ledger.all()) {
    if (keep.has(e.attachment) || d.ledger.busy(e.attachment)) continue;
    if (ipHolder(d.manager, e.ip)) continue;
    if (d.ipam.ownerOf(e.ip) === e.owner && d.ipam.release(e.ip)) out.ips.push(e.ip);
    d.ledger.forget(e.ip);
  }
  if (out.endpoints.length || out.interfaces.length || out.ips.length) d.log.info({ ...out }, 'CNI GC removed stale attachments');
  await delegatedGc(d, call, delegated);
  return out;
}
