/**
 * Durable, atomic replacement of a state file: the data goes to a temporary file next to it, is
 * fsynced, renamed over the file, and the directory is fsynced, so after a crash at any point the
 * file holds either the old or the new content, never a mix. Temporary files are named
 * `<file>.tmp-<pid>-<n>`; `removeTemps` deletes the ones a crash left behind.
 */
import { closeSync, fsyncSync, mkdirSync, openSync, readdirSync, renameSync, rmSync, writeSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

let counter = 0;

/** A fresh temporary path next to `file`. */
function tempPath(file: string): string {
  return `${file}.tmp-${process.pid}-${++counter}`;
}

/** fsyncs a directory, so a rename inside it is on disk. */
function syncDir(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Writes `data` to a new temporary file next to `file` and fsyncs it (synchronously); returns its path. */
export function writeTempSync(file: string, data: string): string {
  mkdirSync(dirname(file), { recursive: true });
  const tmp = tempPath(file);
  const fd = openSync(tmp, 'wx', 0o600);
  let written = false;
  try {
    const buf = Buffer.from(data);
    for (let off = 0; off < buf.length; ) off += writeSync(fd, buf, off, buf.length - off);
    fsyncSync(fd);
    written = true;
  } finally {
    closeSync(fd);
    if (!written) rmSync(tmp, { force: true });
  }
  return tmp;
}

/** Like writeTempSync, with the write and the fsync on the thread pool. */
export async function writeTemp(file: string, data: string): Promise<string> {
  mkdirSync(dirname(file), { recursive: true });
  const tmp = tempPath(file);
  const fh = await open(tmp, 'wx', 0o600);
  let written = false;
  try {
    await fh.writeFile(data);
    await fh.sync();
    written = true;
  } finally {
    await fh.close();
    if (!written) rmSync(tmp, { force: true });
  }
  return tmp;
}

/** Renames a temporary file written by writeTemp/writeTempSync over `file` and fsyncs the directory. */
export function installTemp(tmp: string, file: string): void {
  try {
    renameSync(tmp, file);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
  syncDir(dirname(file));
}

/** Replaces `file` with `data` durably and atomically (synchronously). */
export function writeFileAtomicSync(file: string, data: string): void {
  installTemp(writeTempSync(file, data), file);
}

/** Replaces `file` with `data` durably and atomically (the write and fsync on the thread pool). */
export async function writeFileAtomic(file: string, data: string): Promise<void> {
  installTemp(await writeTemp(file, data), file);
}

/** Removes temporary files of `file` left by an interrupted write; returns their paths. */
export function removeTemps(file: string): string[] {
  const dir = dirname(file);
  const prefix = `${basename(file)}.tmp-`;
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const removed = names.filter((n) => n.startsWith(prefix)).map((n) => join(dir, n));
  for (const p of removed) rmSync(p, { force: true });
  return removed;
}
