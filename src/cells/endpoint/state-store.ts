/**
 * The endpoints' state directory (`--state-dir`), laid out like Cilium's: a regeneration writes
 * `<id>_next/` (ep_config.json, the full endpoint; ep_config.h, its datapath constants) and, once
 * the datapath took the new state, swaps it in: `<id>` -> `<id>_stale`, `<id>_next` -> `<id>`,
 * remove `<id>_stale`. A failed regeneration removes `<id>_next`. A crash at any point leaves
 * either the old or the new directory restorable: scan() deletes `_next` leftovers and brings a
 * `_stale` back when its `<id>` is missing.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { readdir, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { EndpointDatapathConfig } from '../../datapath/types.js';
import { policyMapName } from '../../datapath/map-names.js';
import type { Endpoint, EndpointSnapshot } from './endpoint.js';
import { renderEpConfigHeader } from './ep-config-header.js';
import { stateIO, type StateIO } from '../../lib/state-io.js';
import type { EndpointModel } from './model.js';
import { storedEndpointProblem } from './stored-check.js';

/** The endpoint file in each directory. */
export const EP_CONFIG_JSON = 'ep_config.json';
/** The C header in each directory. */
export const EP_CONFIG_H = 'ep_config.h';

/**
 * The state directory's file saying that endpoints of this node realized a policy revision above 1
 * (rules existed), with that revision: written once, before the first such build, instead of every
 * endpoint's directory (restore reads it like a stored revision above 1, policyStoreMissing).
 */
export const RULES_MARKER = 'policy-rules-realized';

/** What ep_config.json holds: the snapshot used to restore, plus the model for people and tools. */
export interface StoredEndpoint extends EndpointSnapshot {
  readonly model: EndpointModel;
}

/** What a scan found. */
export interface ScanResult {
  readonly endpoints: StoredEndpoint[];
  /** Leftover `_next` directories removed (interrupted regenerations). */
  readonly removedNext: string[];
  /** `_stale` directories brought back because their `<id>` was missing. */
  readonly recoveredStale: string[];
  /** Directories that could not be read, with why; they are left in place. */
  readonly invalid: { readonly dir: string; readonly error: string }[];
}

const ENTRY = /^(\d+)(_next|_stale)?$/;

/** What a build realizes once committed, recorded in ep_config.json so a restore can trust it. */
export interface BuildRecord {
  /** Hash of the datapath configuration the build loads (or finds loaded). */
  readonly datapathHash?: string;
  /** Policy revision the build writes to the maps. */
  readonly policyRevision?: number;
}

/** What a directory written by this store holds: its snapshot but the policy revision, and that revision. */
interface Written {
  readonly key: string;
  readonly policyRevision?: number;
}

/** Reads and writes the endpoints' state directories. */
export class EndpointStateStore {
  /** The calls regenerations make (synchronous on tmpfs, see state-io.ts). */
  readonly io: StateIO;
  /** Per endpoint, what its committed directory holds (written by this process; none after a start). */
  private readonly committed = new Map<number, Written>();
  /** Per endpoint, what its `_next` directory holds until commit or discard. */
  private readonly prepared = new Map<number, Written>();
  /** The revision RULES_MARKER holds (undefined: no marker). */
  private marked?: number;

  constructor(readonly root: string) {
    this.io = stateIO(root);
    this.marked = readMarker(join(root, RULES_MARKER));
  }

  /** The revision the node's RULES_MARKER says rules existed at, or undefined without one. */
  get rulesRealized(): number | undefined {
    return this.marked;
  }

  /**
   * Records, before a build realizes `revision` when it is above 1, that rules existed on this node
   * (RULES_MARKER, written once; a throw fails the build). Restore then refuses a missing policy
   * store under any stored endpoint, so a policy-only regeneration need not rewrite its directory.
   */
  markRulesRealized(revision: number): void {
    if (revision <= 1 || this.marked !== undefined) return;
    mkdirSync(this.root, { recursive: true });
    writeFileSync(join(this.root, RULES_MARKER), `${JSON.stringify({ revision })}\n`);
    this.marked = revision;
  }

  /** Removes RULES_MARKER (a start without a policy store and without stored endpoints: no rules exist any more). */
  clearRulesRealized(): void {
    rmSync(join(this.root, RULES_MARKER), { force: true });
    this.marked = undefined;
  }

  /** `<root>/<id>`. */
  dirOf(id: number): string {
    return join(this.root, String(id));
  }

  /** `<root>/<id>_next`. */
  nextDirOf(id: number): string {
    return join(this.root, `${id}_next`);
  }

  private staleDirOf(id: number): string {
    return join(this.root, `${id}_stale`);
  }

  /** The snapshot of `ep` once `built` is committed, as a key without the policy revision. */
  private written(snap: EndpointSnapshot, built: BuildRecord): Written {
    const datapathHash = built.datapathHash ?? snap.datapathHash;
    return { key: JSON.stringify({ ...snap, datapathHash, policyRevision: undefined }), policyRevision: built.policyRevision ?? snap.policyRevision };
  }

  /**
   * Whether the committed directory of `ep` already holds what `built` would write but a newer
   * policy revision, and a restore from it stays fail closed: a policy-only regeneration then
   * skips prepare/commit. The stored revision is what restore checks the policy store against
   * (policyStoreMissing: rules existed when it is above 1, or when RULES_MARKER is there), so a
   * revision crossing 1 is written unless the marker says it for the node; above 1 it may lag the
   * realized one (a restore regenerates from the policy store anyway, and only ever reads it as
   * "rules existed"). The stored model is then the one of the last write.
   */
  holds(ep: Endpoint, built: BuildRecord): boolean {
    const c = this.committed.get(ep.id);
    if (!c) return false;
    const w = this.written(ep.toSnapshot(), built);
    if (w.key !== c.key) return false;
    if (w.policyRevision === c.policyRevision) return true;
    const want = w.policyRevision ?? 0;
    return want >= (c.policyRevision ?? 0) && ((c.policyRevision ?? 0) > 1 || (this.marked !== undefined && want > 1));
  }

  /** Writes `<id>_next/` for the endpoint as it will be once `cfg` (and `built`) is in the datapath. */
  async prepare(ep: Endpoint, cfg: EndpointDatapathConfig, built: BuildRecord = {}): Promise<void> {
    const io = this.io;
    const next = this.nextDirOf(ep.id);
    this.prepared.delete(ep.id);
    await io.mkdir(next).catch(async (err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return io.mkdir(next, { recursive: true });
      if (err.code !== 'EEXIST') throw err;
      await io.rm(next);
      return io.mkdir(next);
    });
    const snap = ep.toSnapshot();
    // what this build will have realized once committed (the endpoint itself only says so after)
    const stored: StoredEndpoint = { ...snap, datapathHash: built.datapathHash ?? snap.datapathHash, policyRevision: built.policyRevision ?? snap.policyRevision, model: ep.toModel() };
    await Promise.all([
      // compact: the model lists the policy's identities (thousands under a broad policy), written at every regeneration
      io.writeFile(join(next, EP_CONFIG_JSON), `${JSON.stringify(stored)}\n`),
      io.writeFile(join(next, EP_CONFIG_H), renderEpConfigHeader(cfg, policyMapName(ep.id))),
    ]);
    this.prepared.set(ep.id, this.written(snap, built));
  }

  /** Swaps `<id>_next` in as `<id>`; on a failed swap puts the old directory back. */
  async commit(id: number): Promise<void> {
    const io = this.io;
    const written = this.prepared.get(id);
    this.prepared.delete(id);
    // unknown until the swap is done: a failure below must not let holds() skip the next write
    this.committed.delete(id);
    const dir = this.dirOf(id);
    const stale = this.staleDirOf(id);
    // on tmpfs a new endpoint's missing directory is found by a stat, not by a failed rename (an
    // exception: five times the cost); the steps that follow are the same either way
    const hadOld = io.sync && !existsSync(dir) ? false : await io.rename(dir, stale).then(() => true, async (err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return false;
      if (err.code !== 'ENOTEMPTY' && err.code !== 'EEXIST') throw err;
      await io.rm(stale);
      await io.rename(dir, stale);
      return true;
    });
    try {
      await io.rename(this.nextDirOf(id), dir);
    } catch (err) {
      if (hadOld) await io.rename(stale, dir);
      throw err;
    }
    if (hadOld) await io.rm(stale);
    if (written) this.committed.set(id, written);
  }

  /** Removes `<id>_next` (failed regeneration). */
  async discard(id: number): Promise<void> {
    this.prepared.delete(id);
    await this.io.rm(this.nextDirOf(id));
  }

  /** Removes every directory of an endpoint (deleted endpoint). */
  async remove(id: number): Promise<void> {
    this.prepared.delete(id);
    this.committed.delete(id);
    await Promise.all([this.dirOf(id), this.nextDirOf(id), this.staleDirOf(id)].map((d) => rm(d, { recursive: true, force: true })));
  }

  /** Reads one stored endpoint. */
  async read(id: number): Promise<StoredEndpoint> {
    const text = await readFile(join(this.dirOf(id), EP_CONFIG_JSON), 'utf8');
    const v = JSON.parse(text) as unknown;
    const problem = storedEndpointProblem(v, id);
    if (problem) throw new Error(`${EP_CONFIG_JSON} of endpoint ${id} is not a cellium endpoint: ${problem}`);
    return v as StoredEndpoint;
  }

  /** Cleans up interrupted regenerations and reads every stored endpoint, by ID. */
  async scan(): Promise<ScanResult> {
    const result: ScanResult = { endpoints: [], removedNext: [], recoveredStale: [], invalid: [] };
    let names: string[];
    try {
      names = await readdir(this.root);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return result;
      throw err;
    }
    const present = new Set(names);
    const ids = new Set<number>();
    for (const name of names) {
      const m = ENTRY.exec(name);
      if (!m) continue;
      const id = Number(m[1]);
      if (m[2] === '_next') {
        await rm(join(this.root, name), { recursive: true, force: true });
        result.removedNext.push(name);
      } else if (m[2] === '_stale') {
        if (present.has(String(id))) await rm(join(this.root, name), { recursive: true, force: true });
        else {
          await rename(join(this.root, name), this.dirOf(id));
          result.recoveredStale.push(name);
          ids.add(id);
        }
      } else ids.add(id);
    }
    for (const id of [...ids].sort((a, b) => a - b)) {
      try {
        result.endpoints.push(await this.read(id));
      } catch (err) {
        result.invalid.push({ dir: this.dirOf(id), error: (err as Error).message });
      }
    }
    return result;
  }
}

/** The revision in a RULES_MARKER file; undefined when there is none (an unreadable one counts as revision 2: rules existed). */
function readMarker(path: string): number | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    return 2;
  }
  try {
    const r = (JSON.parse(text) as { revision?: unknown }).revision;
    return typeof r === 'number' && Number.isInteger(r) && r > 1 ? r : 2;
  } catch {
    return 2;
  }
}
