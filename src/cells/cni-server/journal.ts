/**
 * The journal of the host interfaces the CNI server creates: one file per interface,
 * `<state-dir>/cni-attachments/<lxc name>.json`, written before the veth pair exists and removed
 * once the interface is gone (DEL, rollback, GC). After a crash it names every interface (and the
 * IPs) an interrupted ADD may have left, so they can be removed without touching an interface any
 * other tool or agent made. The file is named after the interface, so even a record the crash tore
 * names what to remove.
 */
import { RecordDir, type RecordFile } from './record-dir.js';

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
export type JournalEntry = RecordFile<AttachmentRecord>;

function isAttachment(v: unknown, hostName: string): v is AttachmentRecord {
  const r = v as Partial<AttachmentRecord> | null;
  return !!r && r.hostName === hostName && typeof r.containerId === 'string' && typeof r.ifName === 'string' && Array.isArray(r.ips);
}

/** The journal in one directory. */
export class AttachmentJournal {
  private readonly files: RecordDir<AttachmentRecord>;

  constructor(readonly dir: string) {
    this.files = new RecordDir(dir, isAttachment);
  }

  /** Records an interface about to be created (resolves once the file is written). */
  write(r: AttachmentRecord): Promise<void> {
    return this.files.write(r.hostName, r);
  }

  /** Forgets an interface (it is gone); nothing recorded is fine. */
  remove(hostName: string): Promise<void> {
    return this.files.remove(hostName);
  }

  /** Every recorded interface; files that are not the journal's are ignored. */
  list(): Promise<JournalEntry[]> {
    return this.files.list();
  }
}
