/**
 * GC (CNI 1.1): removes every attachment the runtime no longer lists in `cni.dev/valid-attachments`:
 * endpoints made by CNI ADD (they carry a CNI attachment), host interfaces an ADD created that no
 * endpoint holds (an ADD a crash interrupted), and IPs an ADD allocated that no endpoint holds.
 * Attachments with a command in progress, and endpoints another network made (`cellium.io/cni-network`),
 * are left alone. The IPAM plugin of delegated IPAM gets the
 * GC too (delegated-gc.ts), once the endpoints are gone: every recorded attachment of this network
 * that is not valid has its addresses released.
 */
import type { CniDeps } from './deps.js';
import { delegatedGc } from './delegated-gc.js';
import { pluginOf } from './delegated-source.js';
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
  /** Attachments whose delegated IPAM plugin released their addresses. */
  readonly ipamReleased: string[];
}

/** Runs GC; each stale attachment is removed under its lock. */
export async function runGc(d: CniDeps, call: ParsedCall): Promise<GcOutcome> {
  const valid = call.conf.validAttachments;
  if (!valid) throw invalidConfig('cni.dev/valid-attachments', 'is required for GC');
  const keep = new Set(valid.map((a) => attachmentKey(a.containerID, a.ifname)));
  const out: GcOutcome = { endpoints: [], interfaces: [], ips: [], ipamReleased: [] };
  for (const ep of d.manager.getEndpoints()) {
    if (!ep.containerId || !ep.containerIfName) continue;
    const key = attachmentKey(ep.containerId, ep.containerIfName);
    if (keep.has(key) || d.ledger.busy(key)) continue;
    // the runtime lists only this network's attachments: another network's endpoints are not stale
    if (ep.cniNetwork !== undefined && ep.cniNetwork !== call.conf.name) continue;
    const { containerId, containerIfName } = ep;
    const plugin = pluginOf(ep.ipamSource);
    await d.ledger.withLock(key, async () => {
      // an endpoint made before IPAM records existed gets one now: its addresses are released below
      if (plugin && !d.ipamRecords.has(containerId, containerIfName)) await d.ipamRecords.write({ containerId, ifName: containerIfName, network: call.conf.name, plugin });
      await removeAttachment(d, containerId, containerIfName, 'CNI GC: not a valid attachment');
    });
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
  if (out.endpoints.length || out.interfaces.length || out.ips.length) d.log.info({ endpoints: out.endpoints, interfaces: out.interfaces, ips: out.ips }, 'CNI GC removed stale attachments');
  out.ipamReleased.push(...(await delegatedGc(d, call, keep)));
  if (out.ipamReleased.length) d.log.info({ attachments: out.ipamReleased }, 'CNI GC: the IPAM plugin released the stale attachments\' addresses');
  return out;
}
