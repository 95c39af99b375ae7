/**
 * The record of what delegated IPAM plugins may hold: one file per attachment,
 * `<state-dir>/cni-ipam/<lxc name>.json` (named like the attachment's host interface), written
 * before the plugin's ADD runs and removed only once its DEL succeeded. So an address the plugin
 * gave is never forgotten: an IPAM DEL that failed (in DEL, in an ADD's rollback, in a GC), an ADD
 * a crash interrupted, an endpoint a GC removed — each stays recorded until a CNI GC of its network
 * that does not list the attachment passes the release on to the plugin (docs/cni.md, "GC").
 */
import { existsSync } from 'node:fs';
import { hostIfName } from './plumbing.js';
import { RecordDir } from './record-dir.js';

/** The records' directory under the state directory. */
export const IPAM_RECORDS_DIR = 'cni-ipam';

/** One attachment whose addresses came from an IPAM plugin. */
export interface IpamRecord {
  readonly containerId: string;
  readonly ifName: string;
  /** The netconf's `name`: only a GC of this network releases it. */
  readonly network: string;
  /** The plugin (`ipam.type`) that gave the addresses. */
  readonly plugin: string;
}

function isRecord(v: unknown, hostName: string): v is IpamRecord {
  const r = v as Partial<Record<keyof IpamRecord, unknown>> | null;
  return !!r && typeof r === 'object' && ['containerId', 'ifName', 'network', 'plugin'].every((k) => typeof r[k as keyof IpamRecord] === 'string')
    && hostIfName(r.containerId as string, r.ifName as string) === hostName;
}

/** The records in one directory. */
export class IpamRecords {
  private readonly files: RecordDir<IpamRecord>;

  constructor(readonly dir: string) {
    this.files = new RecordDir(dir, isRecord);
  }

  /** Records an attachment before its plugin ADD (resolves once the file is written). */
  write(r: IpamRecord): Promise<void> {
    return this.files.write(hostIfName(r.containerId, r.ifName), { containerId: r.containerId, ifName: r.ifName, network: r.network, plugin: r.plugin });
  }

  /** Whether the attachment is recorded. */
  has(containerId: string, ifName: string): boolean {
    return existsSync(this.files.path(hostIfName(containerId, ifName)));
  }

  /** Forgets an attachment (its plugin released it); nothing recorded is fine. */
  remove(containerId: string, ifName: string): Promise<void> {
    return this.files.remove(hostIfName(containerId, ifName));
  }

  /** Every readable record; a file that is not one (a write a crash cut short) is skipped and named in `unreadable`. */
  async list(): Promise<{ records: IpamRecord[]; unreadable: string[] }> {
    const out = { records: [] as IpamRecord[], unreadable: [] as string[] };
    for (const f of await this.files.list()) {
      if (f.record) out.records.push(f.record);
      else out.unreadable.push(`${f.hostName}.json: ${f.error ?? 'unreadable'}`);
    }
    return out;
  }
}
