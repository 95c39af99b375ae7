/**
 * The identities this node holds, kept in `<state-dir>/identities-crd.json` so that they work
 * across a restart without the apiserver (Kubernetes mode's "restored identities keep working"):
 * the restored endpoints take them at once, and they are checked against the apiserver once its
 * CiliumIdentities are listed. Written atomically and coalesced (lib/coalesced-file.ts); a file
 * that cannot be read stops the start (fail closed) with the fix.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { removeTemps } from '../../lib/atomic-file.js';
import { CoalescedFile } from '../../lib/coalesced-file.js';
import { badJournal } from './errors.js';

/** File format version. */
const VERSION = 1;

/** One held identity: its number and sorted labels. */
export interface HeldIdentity {
  readonly id: number;
  readonly labels: readonly string[];
}

/** The journal file of a state directory. */
export function journalFile(stateDir: string): string {
  return join(stateDir, 'identities-crd.json');
}

/** The journal; see the module comment. */
export class HeldJournal {
  private readonly writer: CoalescedFile;

  /** `onError`: told of every failed write (the next change writes again). */
  constructor(
    readonly file: string,
    onError?: (err: Error) => void,
  ) {
    this.writer = new CoalescedFile(file, onError);
  }

  /** What the file holds ([] when there is none). */
  async load(): Promise<HeldIdentity[]> {
    removeTemps(this.file);
    let text: string;
    try {
      text = await readFile(this.file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw badJournal(this.file, (err as Error).message);
    }
    let doc: { version?: unknown; held?: unknown };
    try {
      doc = JSON.parse(text) as typeof doc;
    } catch (err) {
      throw badJournal(this.file, `not JSON: ${(err as Error).message}`);
    }
    if (doc?.version !== VERSION || !Array.isArray(doc.held)) throw badJournal(this.file, `expected {"version":${VERSION},"held":[...]}`);
    return doc.held.map((raw: unknown, i: number) => {
      const e = raw as { id?: unknown; labels?: unknown };
      if (!Number.isInteger(e?.id) || !Array.isArray(e.labels) || !e.labels.every((l) => typeof l === 'string')) {
        throw badJournal(this.file, `/held/${i} must be {"id": <integer>, "labels": [<string>...]}`);
      }
      return { id: e.id as number, labels: e.labels as string[] };
    });
  }

  /**
   * Writes the held set in the background (coalesced with other changes). Not waited for by an
   * allocation: one a crash kept out of the file is only missing at a restart without the
   * apiserver, where its endpoint then waits for the apiserver (fail closed).
   */
  schedule(held: () => readonly HeldIdentity[]): void {
    this.writer.schedule(() => `${JSON.stringify({ version: VERSION, held: [...held()].sort((a, b) => a.id - b.id) })}\n`);
  }

  /** Waits for pending writes. */
  async idle(): Promise<void> {
    await this.writer.idle();
  }
}
