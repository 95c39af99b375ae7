/**
 * A directory of small JSON records, one file per host interface (`<lxc name>.json`), written
 * before the work they record and removed after it: the shape of the ADD journal and of the
 * delegated IPAM records. A file named after the interface names what to clean up even when a
 * crash tore its content.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stateIO, type StateIO } from '../../lib/state-io.js';
import { HOST_IF_PREFIX } from './plumbing.js';

/** A record file's name: a host interface name (`lxc` + 11 hex digits) and `.json`. */
const FILE = new RegExp(`^(${HOST_IF_PREFIX}[0-9a-f]{11})\\.json$`);

/** A record file as read back: its interface name, and the record unless the file is unreadable. */
export interface RecordFile<T> {
  readonly hostName: string;
  readonly record?: T;
  /** Why the record could not be read (a write a crash cut short, or not a record of this kind). */
  readonly error?: string;
}

/** The records of one directory; `check` says whether parsed JSON is a record of `hostName`. */
export class RecordDir<T> {
  private readonly io: StateIO;

  constructor(readonly dir: string, private readonly check: (v: unknown, hostName: string) => v is T) {
    this.io = stateIO(dir);
  }

  /** Writes the record of `hostName` (the directory made when missing; resolves once written). */
  async write(hostName: string, record: T): Promise<void> {
    const text = JSON.stringify(record);
    try {
      await this.io.writeFile(this.path(hostName), text);
    } catch (err) {
      if ((err as { code?: string }).code !== 'ENOENT') throw err;
      await this.io.mkdir(this.dir, { recursive: true });
      await this.io.writeFile(this.path(hostName), text);
    }
  }

  /** Removes the record of `hostName`; nothing recorded is fine. */
  async remove(hostName: string): Promise<void> {
    await this.io.rm(this.path(hostName));
  }

  /** Every record file, by name; files whose names are not records' are ignored. */
  async list(): Promise<RecordFile<T>[]> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch (err) {
      if ((err as { code?: string }).code === 'ENOENT') return [];
      throw err;
    }
    const out: RecordFile<T>[] = [];
    for (const name of names.sort()) {
      const hostName = FILE.exec(name)?.[1];
      if (!hostName) continue;
      try {
        const record = JSON.parse(await readFile(join(this.dir, name), 'utf8')) as unknown;
        if (!this.check(record, hostName)) throw new Error('not a record of this directory');
        out.push({ hostName, record });
      } catch (err) {
        if ((err as { code?: string }).code === 'ENOENT') continue; // removed meanwhile
        out.push({ hostName, error: (err as Error).message });
      }
    }
    return out;
  }

  /** The file of `hostName`. */
  path(hostName: string): string {
    return join(this.dir, `${hostName}.json`);
  }
}
