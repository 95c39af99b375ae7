/**
 * The record of what delegated IPAM plugins may hold: one file per attachment,
 * `<state-dir>/cni-ipam/<lxc name>.json` (named like the attachment's host interface), written
 * before the plugin's ADD runs and removed only once its DEL succeeded. So an address the plugin
 * gave is never forgotten: an IPAM DEL that failed (in DEL, in an ADD's rollback, in a GC), an ADD
 * a crash interrupted, an endpoint a GC removed — each stays recorded until a CNI GC of its network
 * that does not list the attachment passes the release on to the plugin (docs/cni.md, "GC").
 */
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stateIO, type StateIO } from '../../lib/state-io.js';
import { hostIfName } from './plumbing.js';

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

function isRecord(v: unknown): v is IpamRecord {
  const r = v as Partial<Record<keyof IpamRecord, unknown>> | null;
  return !!r && typeof r === 'object' && ['containerId', 'ifName', 'network', 'plugin'].every((k) => typeof r[k as keyof IpamRecord] === 'string');
}

/** The records in one directory. */
export class IpamRecords {
  private readonly io: StateIO;

  constructor(readonly dir: string) {
    this.io = stateIO(dir);
  }

  /** Records an attachment before its plugin ADD (resolves once the file is written). */
  async write(r: IpamRecord): Promise<void> {
    const text = JSON.stringify({ containerId: r.containerId, ifName: r.ifName, network: r.network, plugin: r.plugin });
    try {
      await this.io.writeFile(this.path(r.containerId, r.ifName), text);
    } catch (err) {
      if ((err as { code?: string }).code !== 'ENOENT') throw err;
      await this.io.mkdir(this.dir, { recursive: true });
      await this.io.writeFile(this.path(r.containerId, r.ifName), text);
    }
  }

  /** Whether the attachment is recorded. */
  has(containerId: string, ifName: string): boolean {
    return existsSync(this.path(containerId, ifName));
  }

  /** Forgets an attachment (its plugin released it); nothing recorded is fine. */
  async remove(containerId: string, ifName: string): Promise<void> {
    await this.io.rm(this.path(containerId, ifName));
  }

  /** Every readable record; a file that is not one (a write a crash cut short) is skipped and named in `unreadable`. */
  async list(): Promise<{ records: IpamRecord[]; unreadable: string[] }> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch (err) {
      if ((err as { code?: string }).code === 'ENOENT') return { records: [], unreadable: [] };
      throw err;
    }
    const out = { records: [] as IpamRecord[], unreadable: [] as string[] };
    for (const name of names.filter((n) => n.endsWith('.json')).sort()) {
      try {
        const r = JSON.parse(await readFile(join(this.dir, name), 'utf8')) as unknown;
        if (!isRecord(r) || `${hostIfName(r.containerId, r.ifName)}.json` !== name) throw new Error('not an IPAM record');
        out.records.push(r);
      } catch (err) {
        if ((err as { code?: string }).code !== 'ENOENT') out.unreadable.push(`${name}: ${(err as Error).message}`);
      }
    }
    return out;
  }

  private path(containerId: string, ifName: string): string {
    return join(this.dir, `${hostIfName(containerId, ifName)}.json`);
  }
}
