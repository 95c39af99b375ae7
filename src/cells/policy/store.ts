/**
 * The policy store: the repository's rules, its revision and the numbers of the CIDR identities its
 * rules use, in `<state-dir>/policies.json`, so a restarted agent enforces exactly what it enforced
 * before. Every import and delete is written durably before it is applied (`save`: temporary file,
 * fsync, rename, fsync of the directory); revision bumps that do not change rules (an identity
 * appearing under a selector) and newly known CIDR numbers follow in the background (`saveLater`,
 * coalesced). A background write never lands over a newer synchronous one. A store that exists but
 * cannot be read stops the agent (storeUnreadable); a missing one is an empty repository.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../../hive/logger.js';
import { removeTemps } from '../../lib/atomic-file.js';
import { CoalescedFile } from '../../lib/coalesced-file.js';
import { storeUnreadable, storeWriteFailed } from './errors.js';
import type { PolicyRule } from './types.js';

/** The store's file name inside the state directory. */
export const POLICY_STORE_FILE = 'policies.json';

/** `<state-dir>/policies.json`. */
export function policyStoreFile(stateDir: string): string {
  return join(stateDir, POLICY_STORE_FILE);
}

/** File format version. */
const VERSION = 1;

/** What the store holds. */
export interface StoredPolicy {
  /** The repository's revision. */
  readonly revision: number;
  /** The rules as `get()` returns them, in order. */
  readonly rules: readonly PolicyRule[];
  /** CIDR -> number of its CIDR identity, for every CIDR the rules name that has one. */
  readonly cidrIdentities: Readonly<Record<string, number>>;
}

/** Reads and writes the policy store. */
export class PolicyStore {
  private readonly writer: CoalescedFile;

  constructor(
    readonly file: string,
    private readonly log?: Logger,
  ) {
    this.writer = new CoalescedFile(file, (err) => this.log?.error({ file, err: err.message }, 'writing the policy store failed; retried with the next change'));
  }

  /** The last write's failure, cleared by the next success. */
  get lastError(): string | undefined {
    return this.writer.lastError?.message;
  }

  /** The stored policy; undefined when there is no store. Throws storeUnreadable when it exists but cannot be used. */
  async load(): Promise<StoredPolicy | undefined> {
    for (const tmp of removeTemps(this.file)) this.log?.info({ file: tmp }, 'removed a policy store write interrupted by a crash');
    let text: string;
    try {
      text = await readFile(this.file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw storeUnreadable(this.file, `cannot be read (${(err as Error).message})`);
    }
    return parseStore(this.file, text);
  }

  /** Writes `s` durably before returning; throws storeWriteFailed (the previous store stays intact). */
  save(s: StoredPolicy): void {
    try {
      this.writer.writeSync(render(s));
    } catch (err) {
      throw storeWriteFailed(this.file, (err as Error).message);
    }
  }

  /** Writes what `get()` returns once the current burst of changes is over (coalesced, off the event loop). */
  saveLater(get: () => StoredPolicy): void {
    this.writer.schedule(() => render(get()));
  }

  /** Waits for background writes. */
  async flush(): Promise<void> {
    await this.writer.idle();
  }
}

function render(s: StoredPolicy): string {
  return `${JSON.stringify({ version: VERSION, revision: s.revision, rules: s.rules, cidrIdentities: s.cidrIdentities }, null, 1)}\n`;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Parses and checks the store's shape (the rules themselves are checked when they are compiled). */
function parseStore(file: string, text: string): StoredPolicy {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw storeUnreadable(file, `is not JSON (${(err as Error).message})`);
  }
  const shape = `{"version":${VERSION},"revision":<integer >= 1>,"rules":[...],"cidrIdentities":{"<cidr>":<integer>}}`;
  if (!isObject(doc)) throw storeUnreadable(file, `expected ${shape}`);
  if (doc.version !== VERSION) throw storeUnreadable(file, `version ${JSON.stringify(doc.version)} is not supported (expected ${VERSION})`);
  if (!Number.isSafeInteger(doc.revision) || (doc.revision as number) < 1) throw storeUnreadable(file, `/revision must be an integer >= 1, got ${JSON.stringify(doc.revision)}`);
  if (!Array.isArray(doc.rules)) throw storeUnreadable(file, `/rules must be an array (expected ${shape})`);
  const bad = doc.rules.findIndex((r) => !isObject(r));
  if (bad >= 0) throw storeUnreadable(file, `/rules/${bad} must be an object`);
  if (!isObject(doc.cidrIdentities)) throw storeUnreadable(file, `/cidrIdentities must be an object (expected ${shape})`);
  const owner = new Map<number, string>();
  for (const [cidr, id] of Object.entries(doc.cidrIdentities)) {
    if (!Number.isSafeInteger(id)) throw storeUnreadable(file, `/cidrIdentities/${cidr} must be an integer, got ${JSON.stringify(id)}`);
    const other = owner.get(id as number);
    if (other) throw storeUnreadable(file, `/cidrIdentities gives identity ${String(id)} to both ${other} and ${cidr}`);
    owner.set(id as number, cidr);
  }
  return { revision: doc.revision as number, rules: doc.rules as PolicyRule[], cidrIdentities: doc.cidrIdentities as Record<string, number> };
}
