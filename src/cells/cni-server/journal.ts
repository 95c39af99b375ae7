/**
 * The journal of the host interfaces the CNI server creates: one file per interface,
 * `<state-dir>/cni-attachments/<lxc name>.json`, written before the veth pair exists and removed
 * once the interface is gone (DEL, rollback, GC). After a crash it names every interface (and the
 * IPs) an interrupted ADD may have left, so they can be removed without touching an interface any
 * other tool or agent made. The file is named after the interface, so even a record the crash tore
 * names what to remove.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stateIO, type StateIO } from '../../lib/state-io.js';
import { HOST_IF_PREFIX } from './plumbing.js';

/** The journal's directory under the state directory. */
export const JOURNAL_DIR = 'cni-attachments';

/** One host interface the CNI server created for an attachment, with the IPs it allocated for it. */
export interface AttachmentRecord {
  readonly containerId: string;
  readonly ifName: string;
  readonly hostName: string;
  readonly ips: readonly { readonly ip: string; readonly owner: string }[];
}

/** A journal file as read back: its interface name, and the record unless the file is unreadable. */
export interface JournalEntry {
  readonly hostName: string;
  readonly record?: AttachmentRecord;
  /** Why the record could not be read (a write a crash cut short). */
  readonly error?: string;
}

const FILE = new RegExp(`^(${HOST_IF_PREFIX}[0-9a-f]{11})\\.json$`);

/** The journal in one directory. */
export class AttachmentJournal {
  private readonly io: StateIO;

  constructor(readonly dir: string) {
    this.io = stateIO(dir);
  }

  /** Records an interface about to be created (resolves once the file is written). */
  async write(r: AttachmentRecord): Promise<void> {
    const text = JSON.stringify(r);
    try {
      await this.io.writeFile(this.path(r.hostName), text);
    } catch (err) {
      if ((err as { code?: string }).code !== 'ENOENT') throw err;
      await this.io.mkdir(this.dir, { recursive: true });
      await this.io.writeFile(this.path(r.hostName), text);
    }
  }

  /** Forgets an interface (it is gone); nothing recorded is fine. */
  async remove(hostName: string): Promise<void> {
    await this.io.rm(this.path(hostName));
  }

  /** Every recorded interface; files that are not the journal's are ignored. */
  async list(): Promise<JournalEntry[]> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch (err) {
      if ((err as { code?: string }).code === 'ENOENT') return [];
      throw err;
    }
    const out: JournalEntry[] = [];
    for (const name of names.sort()) {
      const hostName = FILE.exec(name)?.[1];
      if (!hostName) continue;
      try {
        const record = JSON.parse(await readFile(join(this.dir, name), 'utf8')) as AttachmentRecord;
        if (record?.hostName !== hostName || typeof record.containerId !== 'string' || typeof record.ifName !== 'string' || !Array.isArray(record.ips)) {
          throw new Error('not an attachment record');
        }
        out.push({ hostName, record });
      } catch (err) {
        if ((err as { code?: string }).code === 'ENOENT') continue; // removed meanwhile
        out.push({ hostName, error: (err as Error).message });
      }
    }
    return out;
  }

  private path(hostName: string): string {
    return join(this.dir, `${hostName}.json`);
  }
}
