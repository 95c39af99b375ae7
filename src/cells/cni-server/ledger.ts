/**
 * Bookkeeping of the CNI server: which attachments have a command running (a per-attachment lock,
 * so ADD, DEL and CHECK of one container interface never interleave and GC skips them), and which
 * IPs an ADD allocated for which attachment (so DEL and GC can release IPs no endpoint holds).
 */

/** `<container-id>:<ifname>`, Cilium's CNI attachment ID. */
export function attachmentKey(containerId: string, ifName: string): string {
  return `${containerId}:${ifName}`;
}

/** One IP allocated by an ADD. */
export interface LedgerEntry {
  readonly ip: string;
  readonly owner: string;
  readonly attachment: string;
}

/** Locks per attachment and the IPs allocated per attachment. */
export class AttachmentLedger {
  private readonly tails = new Map<string, Promise<void>>();
  private readonly ips = new Map<string, LedgerEntry>();

  /** Runs fn once every earlier command on the same attachment has finished. */
  async withLock<T>(attachment: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.tails.get(attachment) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((r) => (release = r));
    const tail = prev.then(() => mine);
    this.tails.set(attachment, tail);
    await prev;
    try {
      return await fn();
    } finally {
      release();
      if (this.tails.get(attachment) === tail) this.tails.delete(attachment);
    }
  }

  /** Whether a command is running (or waiting) on the attachment. */
  busy(attachment: string): boolean {
    return this.tails.has(attachment);
  }

  /** Records an IP allocated for an attachment. */
  record(e: LedgerEntry): void {
    this.ips.set(e.ip, e);
  }

  /** Forgets an IP (released, or its endpoint released it). */
  forget(ip: string): void {
    this.ips.delete(ip);
  }

  /** The IPs recorded for one attachment. */
  of(attachment: string): LedgerEntry[] {
    return [...this.ips.values()].filter((e) => e.attachment === attachment);
  }

  /** Every recorded IP. */
  all(): LedgerEntry[] {
    return [...this.ips.values()];
  }
}
