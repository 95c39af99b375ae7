/**
 * The file operations made in the state directory on a hot path (a regeneration, a CNI ADD), chosen
 * once for its file system: on tmpfs (where a node keeps /var/run) a write is a memory copy, cheaper
 * done at once than a thread-pool round trip per call; on a disk a create may wait for the journal,
 * so the calls go to the thread pool and never stall the event loop.
 */
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { onTmpfs } from './tmpfs.js';

/** The calls, all promise-returning whichever way they run. */
export interface StateIO {
  /** true: synchronous calls (tmpfs). */
  readonly sync: boolean;
  mkdir(path: string, opts?: { recursive?: boolean }): Promise<unknown>;
  writeFile(path: string, data: string): Promise<void>;
  rename(from: string, to: string): Promise<void>;
  rm(path: string): Promise<void>;
}

const asyncIO: StateIO = {
  sync: false,
  mkdir: (path, opts) => mkdir(path, opts),
  writeFile: (path, data) => writeFile(path, data),
  rename: (from, to) => rename(from, to),
  rm: (path) => rm(path, { recursive: true, force: true }),
};

/** Runs a synchronous call as a promise (a throw becomes the rejection). */
function settle<T>(fn: () => T): Promise<T> {
  try {
    return Promise.resolve(fn());
  } catch (err) {
    return Promise.reject(err as Error);
  }
}

const syncIO: StateIO = {
  sync: true,
  mkdir: (path, opts) => settle(() => mkdirSync(path, opts)),
  writeFile: (path, data) => settle(() => writeFileSync(path, data)),
  rename: (from, to) => settle(() => renameSync(from, to)),
  rm: (path) => settle(() => rmSync(path, { recursive: true, force: true })),
};

/** The calls for a state directory at `root`. */
export function stateIO(root: string): StateIO {
  return onTmpfs(root) ? syncIO : asyncIO;
}
