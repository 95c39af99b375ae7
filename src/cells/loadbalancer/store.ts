/**
 * The service store: every service with its frontends (and their IDs) and backends, in
 * `<state-dir>/services.json`, so a restarted agent has the same services under the same IDs. Writes
 * are coalesced and atomic (temporary file, fsync, rename, fsync of the directory); `flush` waits for
 * them, so an API change is durable before it is answered. A store that exists but cannot be read
 * stops the agent (storeUnreadable); a missing one is no services.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../../hive/logger.js';
import { removeTemps } from '../../lib/atomic-file.js';
import { CoalescedFile } from '../../lib/coalesced-file.js';
import { storeUnreadable, storeWriteFailed } from './errors.js';
import type { Backend, Frontend, Service } from './types.js';

/** `<state-dir>/services.json`. */
export function serviceStoreFile(stateDir: string): string {
  return join(stateDir, 'services.json');
}

const VERSION = 1;

/** One stored service. */
export interface StoredService {
  readonly service: Service;
  readonly frontends: readonly Frontend[];
  readonly backends: readonly Backend[];
}

/** Reads and writes the service store. */
export class ServiceStore {
  private readonly writer: CoalescedFile;

  constructor(
    readonly file: string,
    private readonly log?: Logger,
  ) {
    this.writer = new CoalescedFile(file, (err) => this.log?.error({ file, err: err.message }, 'writing the service store failed; retried with the next change'));
  }

  /** The last write's failure, cleared by the next success. */
  get lastError(): string | undefined {
    return this.writer.lastError?.message;
  }

  /** The stored services; empty when there is no store. Throws storeUnreadable when it cannot be used. */
  async load(): Promise<StoredService[]> {
    for (const tmp of removeTemps(this.file)) this.log?.info({ file: tmp }, 'removed a service store write interrupted by a crash');
    let text: string;
    try {
      text = await readFile(this.file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw storeUnreadable(this.file, `cannot be read (${(err as Error).message})`);
    }
    return parseStore(this.file, text);
  }

  /** Writes what `get()` returns once the current burst of changes is over (coalesced). */
  saveLater(get: () => readonly StoredService[]): void {
    this.writer.schedule(() => `${JSON.stringify({ version: VERSION, services: get() })}\n`);
  }

  /** Waits for the writes so far; throws storeWriteFailed when the last one failed. */
  async flush(): Promise<void> {
    await this.writer.idle();
    if (this.lastError) throw storeWriteFailed(this.file, this.lastError);
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function parseStore(file: string, text: string): StoredService[] {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw storeUnreadable(file, `is not JSON (${(err as Error).message})`);
  }
  if (!isObject(doc) || doc.version !== VERSION || !Array.isArray(doc.services)) {
    throw storeUnreadable(file, `is not {"version":${VERSION},"services":[...]}`);
  }
  const ids = new Set<number>();
  for (const [i, s] of (doc.services as unknown[]).entries()) {
    if (!isObject(s) || !isObject(s.service) || typeof s.service.key !== 'string' || !Array.isArray(s.frontends) || !Array.isArray(s.backends)) {
      throw storeUnreadable(file, `/services/${i} is not {"service":{"key":...},"frontends":[...],"backends":[...]}`);
    }
    for (const [j, f] of (s.frontends as unknown[]).entries()) {
      if (!isObject(f) || !Number.isInteger(f.id) || !isObject(f.address)) throw storeUnreadable(file, `/services/${i}/frontends/${j} has no id or address`);
      if (ids.has(f.id as number)) throw storeUnreadable(file, `/services/${i}/frontends/${j} repeats service ID ${String(f.id)}`);
      ids.add(f.id as number);
    }
  }
  return doc.services as StoredService[];
}
