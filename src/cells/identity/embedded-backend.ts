/**
 * The embedded identity backend: the label-set -> number table in memory, persisted as JSON in
 * `<state-dir>/identities.json` (the whole table, rewritten atomically) plus
 * `<state-dir>/identities.json.journal` (one line per claim or removal since), so a new identity
 * costs one appended line, not a rewrite of thousands (lib/journaled-file.ts: coalesced, compacted
 * into the snapshot once the journal is as long as the table, and at close). Every change resolves
 * once a write that includes it is on disk.
 */
import { JournaledFile } from '../../lib/journaled-file.js';
import type { IdentityBackend, StoredIdentity } from './backend.js';
import { badStateFile } from './errors.js';

/** File format version. */
const VERSION = 1;

/** The embedded backend. */
export class EmbeddedBackend implements IdentityBackend {
  readonly name = 'embedded';
  private readonly byKey = new Map<string, StoredIdentity>();
  private readonly byId = new Map<number, string>();
  private readonly writer: JournaledFile;

  constructor(readonly file: string) {
    this.writer = new JournaledFile(file, {
      render: () => `${JSON.stringify({ version: VERSION, identities: [...this.byKey.values()].sort((a, b) => a.id - b.id) }, null, 1)}\n`,
      size: () => this.byKey.size,
    });
  }

  /** See IdentityBackend. */
  async load(): Promise<readonly StoredIdentity[]> {
    let loaded: Awaited<ReturnType<JournaledFile['load']>>;
    try {
      loaded = await this.writer.load();
    } catch (err) {
      throw badStateFile(this.file, (err as Error).message);
    }
    for (const s of loaded.snapshot === undefined ? [] : parseStateFile(this.file, loaded.snapshot)) {
      const key = s.labels.join(';');
      this.byKey.set(key, s);
      this.byId.set(s.id, key);
    }
    loaded.records.forEach((r, i) => this.replay(r, i));
    return [...this.byKey.values()];
  }

  /** Applies one journal record: `{"add": id, "labels": [...]}` or `{"del": id}`. */
  private replay(raw: unknown, i: number): void {
    const r = raw as { add?: unknown; del?: unknown; labels?: unknown };
    if (Number.isInteger(r?.add) && Array.isArray(r.labels) && r.labels.every((l) => typeof l === 'string')) {
      const id = r.add as number;
      const labels = r.labels as string[];
      const key = labels.join(';');
      const held = this.byId.get(id);
      if ((held !== undefined && held !== key) || (this.byKey.has(key) && this.byKey.get(key)!.id !== id)) {
        throw badStateFile(this.writer.journal, `record ${i + 1} adds ${id} for "${key}", which the table holds otherwise`);
      }
      this.byKey.set(key, { id, labels });
      this.byId.set(id, key);
    } else if (Number.isInteger(r?.del)) {
      const key = this.byId.get(r.del as number);
      if (key !== undefined) this.byKey.delete(key);
      this.byId.delete(r.del as number);
    } else {
      throw badStateFile(this.writer.journal, `record ${i + 1} must be {"add": <integer>, "labels": [<string>...]} or {"del": <integer>}`);
    }
  }

  /** See IdentityBackend. */
  async claim(key: string, labels: readonly string[], id: number): Promise<number | undefined> {
    const existing = this.byKey.get(key);
    if (existing) return existing.id;
    if (this.byId.has(id)) return undefined;
    this.byKey.set(key, { id, labels: [...labels] });
    this.byId.set(id, key);
    await this.writer.append({ add: id, labels });
    return id;
  }

  /** See IdentityBackend. */
  async remove(key: string): Promise<void> {
    const s = this.byKey.get(key);
    if (!s) return;
    this.byKey.delete(key);
    this.byId.delete(s.id);
    await this.writer.append({ del: s.id });
  }

  /** See IdentityBackend: waits for pending writes and compacts the journal into identities.json. */
  async close(): Promise<void> {
    await this.writer.close();
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
