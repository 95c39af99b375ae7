/**
 * A state file kept as a snapshot plus an append-only journal, so that a change costs one appended
 * line instead of rewriting the whole file (the identity table: thousands of entries, one more per
 * new endpoint). `<file>` is the snapshot, in whatever format its owner renders (unchanged for
 * readers that know only the snapshot); `<file>.journal` starts with a header naming the SHA-256
 * of the snapshot it extends, then one JSON record per line.
 *
 * - `append(record)` is coalesced: the records of one burst (one setImmediate) are one write and
 *   one fdatasync; each call resolves once its record is durable (rejects when that write failed).
 *   Call it in the same synchronous step as the in-memory change it records.
 * - Compaction: when the journal holds at least as many records as the table has entries (or
 *   after a failed append, whose torn bytes must not stay in the journal), the snapshot is
 *   rewritten atomically (atomic-file.ts) and a fresh journal with the new snapshot's hash
 *   installed atomically: amortized O(1) per change. `close()` compacts, so a stopped agent
 *   leaves a complete snapshot (what an older release reads).
 * - Crash safety: a crash between the snapshot and the fresh journal leaves a journal naming the
 *   old snapshot's hash: `load()` ignores it (the new snapshot holds its records). A last line
 *   without its newline is a torn append that nobody was told about: dropped. Any other bad line
 *   throws (the owner reports the file as unreadable: fail closed).
 */
import { closeSync, fdatasyncSync, openSync, writeSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { open, readFile, type FileHandle } from 'node:fs/promises';
import { removeTemps, writeFileAtomic, writeFileAtomicSync } from './atomic-file.js';
import { onTmpfs } from './tmpfs.js';

/** The journal header's format version. */
const JOURNAL_VERSION = 1;

/** What load() read. */
export interface JournalLoad {
  /** The snapshot's text; undefined when there is none. */
  readonly snapshot?: string;
  /** The journal's records after that snapshot, oldest first. */
  readonly records: readonly unknown[];
  /** Why a journal was ignored (it named another snapshot: a crash during compaction), if one was. */
  readonly ignored?: string;
}

/** What the owner provides: the snapshot of the whole table now, and how many entries it has. */
export interface JournalOwner {
  render(): string;
  size(): number;
}

interface Waiter {
  resolve(): void;
  reject(err: Error): void;
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

function header(snapshotHash: string): string {
  return `${JSON.stringify({ journal: JOURNAL_VERSION, snapshot: snapshotHash })}\n`;
}

/** A snapshot + journal pair; see the module comment. */
export class JournaledFile {
  /** `<file>.journal`. */
  readonly journal: string;
  private readonly sync: boolean;
  private pending: string[] = [];
  private waiters: Waiter[] = [];
  private writing?: Promise<void>;
  /** Records in the journal since its header; -1: no journal for the current snapshot yet (the next write compacts). */
  private records = -1;
  private fd?: number;
  private fh?: FileHandle;
  /** Compact at the next write (a failed append may have left a torn line). */
  private mustCompact = false;

  constructor(
    readonly file: string,
    private readonly owner: JournalOwner,
    /** Told of every failed write. */
    private readonly onError?: (err: Error) => void,
  ) {
    this.journal = `${file}.journal`;
    this.sync = onTmpfs(file);
  }

  /** Reads the snapshot and the journal's records; removes temporary files of interrupted writes. */
  async load(): Promise<JournalLoad> {
    removeTemps(this.file);
    removeTemps(this.journal);
    const snapshot = await readOptional(this.file);
    const text = await readOptional(this.journal);
    if (text === undefined) return { snapshot, records: [] };
    const lines = text.split('\n');
    // a last line without its newline is a torn append: never acknowledged
    lines.pop();
    const head = lines.shift();
    let h: { journal?: unknown; snapshot?: unknown };
    try {
      h = JSON.parse(head ?? '') as typeof h;
    } catch {
      throw new Error(`${this.journal}: line 1 is not a journal header (expected {"journal":${JOURNAL_VERSION},"snapshot":"<sha256>"})`);
    }
    if (h?.journal !== JOURNAL_VERSION || typeof h.snapshot !== 'string') throw new Error(`${this.journal}: line 1 is not a journal header (expected {"journal":${JOURNAL_VERSION},"snapshot":"<sha256>"})`);
    if (h.snapshot !== sha256(snapshot ?? '')) {
      return { snapshot, records: [], ignored: `${this.journal} extends another snapshot (a compaction was interrupted): the snapshot holds its records` };
    }
    const records = lines.map((line, i) => {
      try {
        return JSON.parse(line) as unknown;
      } catch (err) {
        throw new Error(`${this.journal}: line ${i + 2} is not JSON: ${(err as Error).message}`, { cause: err });
      }
    });
    this.records = records.length;
    return { snapshot, records };
  }

  /** Appends one record (see the module comment); resolves once it is durable. */
  append(record: unknown): Promise<void> {
    this.pending.push(`${JSON.stringify(record)}\n`);
    const done = new Promise<void>((resolve, reject) => this.waiters.push({ resolve, reject }));
    this.writing ??= this.writeLoop();
    return done;
  }

  /** Waits until every append so far is written (or failed). */
  async idle(): Promise<void> {
    while (this.writing) await this.writing;
  }

  /** Waits for pending appends, compacts when the journal holds records, closes the journal. */
  async close(): Promise<void> {
    await this.idle();
    if (this.records !== 0 || this.mustCompact) {
      try {
        await this.compact();
      } catch (err) {
        this.onError?.(err as Error);
      }
    }
    await this.closeJournal();
  }

  private async writeLoop(): Promise<void> {
    try {
      await new Promise<void>((r) => setImmediate(r));
      while (this.pending.length) {
        const lines = this.pending;
        const waiters = this.waiters;
        this.pending = [];
        this.waiters = [];
        try {
          // compaction renders the table now, which holds these records' changes too
          if (this.mustCompact || this.records < 0 || this.records + lines.length > Math.max(this.owner.size(), 16)) await this.compact();
          else await this.appendLines(lines.join(''), lines.length);
          for (const w of waiters) w.resolve();
        } catch (err) {
          this.mustCompact = true;
          this.onError?.(err as Error);
          for (const w of waiters) w.reject(err as Error);
        }
      }
    } finally {
      this.writing = undefined;
    }
  }

  private async appendLines(data: string, n: number): Promise<void> {
    if (this.sync) {
      this.fd ??= openSync(this.journal, 'a', 0o600);
      const buf = Buffer.from(data);
      for (let off = 0; off < buf.length; ) off += writeSync(this.fd, buf, off, buf.length - off);
      fdatasyncSync(this.fd);
    } else {
      this.fh ??= await open(this.journal, 'a', 0o600);
      await this.fh.writeFile(data);
      await this.fh.datasync();
    }
    this.records += n;
  }

  /** Snapshot first, then a fresh journal naming it: a crash in between leaves the old journal, which load() ignores. */
  private async compact(): Promise<void> {
    const snapshot = this.owner.render();
    await this.closeJournal();
    this.records = -1;
    if (this.sync) {
      writeFileAtomicSync(this.file, snapshot);
      writeFileAtomicSync(this.journal, header(sha256(snapshot)));
    } else {
      await writeFileAtomic(this.file, snapshot);
      await writeFileAtomic(this.journal, header(sha256(snapshot)));
    }
    this.records = 0;
    this.mustCompact = false;
  }

  private async closeJournal(): Promise<void> {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
    const fh = this.fh;
    this.fh = undefined;
    await fh?.close();
  }
}

async function readOptional(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}
