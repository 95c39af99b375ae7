/**
 * CNI GC passed on to the delegated IPAM plugin (CNI 1.1: a plugin that delegates IPAM passes GC
 * on). What is released is what the IPAM records (ipam-records.ts) name for this GC's network and
 * the runtime does not list as valid: attachments the GC just removed, DELs and rollbacks whose
 * IPAM DEL failed, ADDs a crash interrupted. A plugin that supports 1.1.0 gets the GC itself with
 * the runtime's valid attachments (it also frees what it holds that the agent never recorded); an
 * older one (Debian's host-local 1.1 speaks up to 1.0.0) gets an IPAM DEL per stale record, with
 * the netconf at its newest version. A record goes only once its release succeeded; every stale
 * record is tried, and the failures are reported together, so the runtime's next GC retries them.
 */
import { CniErrorCode } from '../../cni/protocol.js';
import type { CniDeps } from './deps.js';
import { ipamPluginType, pluginVersions, runIpamPlugin, versionOrder } from './delegated-ipam.js';
import { CniFailure } from './errors.js';
import type { IpamRecord } from './ipam-records.js';
import { attachmentKey } from './ledger.js';
import type { ParsedCall } from './netconf.js';

const keyOf = (r: IpamRecord): string => attachmentKey(r.containerId, r.ifName);

/**
 * Releases, under each attachment's lock, the stale records that still have no endpoint (an ADD
 * may have made one meanwhile): `release` runs the plugin; resolves with the released keys and
 * the failures (`key: why`).
 */
async function releaseEach(d: CniDeps, stale: readonly IpamRecord[], release: (r: IpamRecord) => Promise<void>): Promise<{ released: string[]; failed: string[] }> {
  const out = { released: [] as string[], failed: [] as string[] };
  for (const r of stale) {
    const key = keyOf(r);
    await d.ledger.withLock(key, async () => {
      if (!d.ipamRecords.has(r.containerId, r.ifName) || d.manager.lookup(`cni-attachment-id:${key}`)) return;
      try {
        await release(r);
        await d.ipamRecords.remove(r.containerId, r.ifName);
        out.released.push(key);
      } catch (err) {
        out.failed.push(`${key}: ${(err as Error).message}`);
      }
    });
  }
  return out;
}

/** Passes the GC on to the IPAM plugin; resolves with the attachments whose addresses were released. */
export async function delegatedGc(d: CniDeps, call: ParsedCall, valid: ReadonlySet<string>): Promise<string[]> {
  const { records, unreadable } = await d.ipamRecords.list();
  if (unreadable.length) d.log.warn({ files: unreadable, dir: d.ipamRecords.dir }, 'CNI GC: unreadable IPAM records skipped (remove them once the plugin no longer holds their addresses)');
  const stale = records.filter((r) => r.network === call.conf.name && !valid.has(keyOf(r)));
  if (d.cfg.ipamMode !== 'delegated-plugin' && stale.length === 0) return [];
  const type = ipamPluginType(call.req.stdin);
  if (!type) {
    if (stale.length) d.log.warn({ attachments: stale.map(keyOf) }, 'CNI GC without an ipam section: no IPAM plugin to release the stale attachments\' addresses with (a GC with the section does)');
    return [];
  }
  const versions = await pluginVersions(type, call);
  if (versions.some((v) => versionOrder(v, '1.1.0') >= 0)) {
    await runIpamPlugin(type, 'GC', call, call.req.stdin);
    return (await releaseEach(d, stale, async () => undefined)).released;
  }
  if (stale.length === 0) return [];
  const newest = versions.at(-1);
  if (!newest) throw new CniFailure(CniErrorCode.IoFailure, `IPAM plugin ${type} VERSION named no supported version; cannot release the addresses of ${stale.length} stale attachments`);
  const { 'cni.dev/valid-attachments': _valid, ...conf } = JSON.parse(call.req.stdin) as Record<string, unknown>;
  const stdin = JSON.stringify({ ...conf, cniVersion: newest });
  const { released, failed } = await releaseEach(d, stale, async (r) => {
    const del: ParsedCall = { ...call, req: { ...call.req, command: 'DEL', containerId: r.containerId, ifName: r.ifName, netns: '', stdin } };
    await runIpamPlugin(type, 'DEL', del, stdin);
  });
  if (failed.length) {
    throw new CniFailure(CniErrorCode.IoFailure, `IPAM plugin ${type} DEL failed during GC for ${failed.length} attachments (they stay recorded; the next GC retries them)`, failed.join('; ').slice(0, 2000));
  }
  return released;
}
