/**
 * The embedded identity backend: the label-set -> number table in memory, persisted as JSON to
 * `<state-dir>/identities.json` (written to a temporary file, fsynced and renamed, so a crash leaves
 * either the old or the new table). Writes are coalesced: every change resolves once a write that
 * includes it is on disk.
 */
import { readFile } from 'node:fs/promises';
import { removeTemps } from '../../lib/atomic-file.js';
import { CoalescedFile } from '../../lib/coalesced-file.js';
import type { IdentityBackend, StoredIdentity } from './backend.js';
import { badStateFile } from './errors.js';

/** File format version. */
const VERSION = 1;

/** The embedded backend. */
export class EmbeddedBackend implements IdentityBackend {
  readonly name = 'embedded';
  private readonly byKey = new Map<string, StoredIdentity>();
  private readonly byId = new Map<number, string>();
  private readonly writer: CoalescedFile;

  constructor(readonly file: string) {
    this.writer = new CoalescedFile(file);
  }

  /** See IdentityBackend. */
  async load(): Promise<readonly StoredIdentity[]> {
    removeTemps(this.file);
    let text: string;
    try {
      text = await readFile(this.file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw badStateFile(this.file, (err as Error).message);
    }
    const list = parseStateFile(this.file, text);
    for (const s of list) {
      const key = s.labels.join(';');
      this.byKey.set(key, s);
      this.byId.set(s.id, key);
    }
    return list;
  }

  /** See IdentityBackend. */
  async claim(key: string, labels: readonly string[], id: number): Promise<number | undefined> {
    const existing = this.byKey.get(key);
    if (existing) return existing.id;
    if (this.byId.has(id)) return undefined;
    this.byKey.set(key, { id, labels: [...labels] });
    this.byId.set(id, key);
    await this.flush();
    return id;
  }

  /** See IdentityBackend. */
  async remove(key: string): Promise<void> {
    const s = this.byKey.get(key);
    if (!s) return;
    this.byKey.delete(key);
    this.byId.delete(s.id);
    await this.flush();
  }

  /** See IdentityBackend. */
  async close(): Promise<void> {
    await this.writer.idle();
  }

  /** Writes the table (coalesced with other changes); throws when the write that holds this change failed. */
  private async flush(): Promise<void> {
    this.writer.schedule(() => {
      const identities = [...this.byKey.values()].sort((a, b) => a.id - b.id);
      return `${JSON.stringify({ version: VERSION, identities }, null, 1)}\n`;
    });
    await this.writer.idle();
    if (this.writer.lastError) throw this.writer.lastError;
  }
}

/** Parses and checks the state file. */
function parseStateFile(file: string, text: string): StoredIdentity[] {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw badStateFile(file, `not JSON: ${(err as Error).message}`);
  }
  const d = doc as { version?: unknown; identities?: unknown };
  if (d?.version !== VERSION || !Array.isArray(d.identities)) throw badStateFile(file, `expected {"version":${VERSION},"identities":[...]}`);
  return d.identities.map((raw: unknown, i: number) => {
    const e = raw as { id?: unknown; labels?: unknown };
    if (!Number.isInteger(e?.id) || !Array.isArray(e.labels) || !e.labels.every((l) => typeof l === 'string')) {
      throw badStateFile(file, `/identities/${i} must be {"id": <integer>, "labels": [<string>...]}`);
    }
    return { id: e.id as number, labels: e.labels as string[] };
  });
}
