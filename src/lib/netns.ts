/**
 * What a path names, as far as network namespaces go, found without entering it and without
 * privileges: a namespace file is an inode of the nsfs pseudo-filesystem (the same device as
 * /proc/self/ns/net), its type is in the name /proc/self/fd/N links to once it is open
 * (`net:[4026532281]`), and its inode number identifies the namespace. Regular files on other
 * filesystems, directories and devices are refused from stat() alone, never opened (opening a
 * FIFO blocks, opening some devices has side effects).
 */
import { constants } from 'node:fs';
import { open, readlink, stat } from 'node:fs/promises';

/**
 * `netns`: a network namespace other than the two below; `own`: this process's network namespace;
 * `init`: the network namespace of PID 1 (the host's when the agent runs in one of its own);
 * `missing`: no such path; `other`: anything else (`what` says what).
 */
export type NetnsKind = 'netns' | 'own' | 'init' | 'missing' | 'other';

/** The outcome of {@link probeNetns}. */
export interface NetnsProbe {
  readonly kind: NetnsKind;
  /** What the path is, fit for "it is …": "a network namespace", "a regular file", "a mnt namespace", … (missing: "does not exist"). */
  readonly what: string;
  /** The namespace's inode number (kinds netns, own and init). */
  readonly inode?: number;
}

interface NsId {
  readonly dev: number;
  readonly ino: number;
}

const SELF_NET = '/proc/self/ns/net';
const INIT_NET = '/proc/1/ns/net';
const NS_LINK = /^([a-z_]+):\[(\d+)\]$/;

async function nsId(path: string): Promise<NsId | undefined> {
  try {
    const st = await stat(path);
    return { dev: st.dev, ino: st.ino };
  } catch {
    return undefined;
  }
}

function fileKind(st: Awaited<ReturnType<typeof stat>>): string {
  if (st.isDirectory()) return 'a directory';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  if (st.isFIFO()) return 'a FIFO';
  if (st.isSocket()) return 'a socket';
  return 'a regular file';
}

/**
 * The namespace type of an nsfs file ("net", "mnt", …) from the /proc/self/fd link of the opened
 * file ("nsfs" when the link does not say); undefined when what was opened is not what was stat()ed.
 */
async function nsType(path: string, dev: number, ino: number): Promise<string | undefined> {
  const fh = await open(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  try {
    const st = await fh.stat();
    if (st.dev !== dev || st.ino !== ino) return undefined;
    return NS_LINK.exec(await readlink(`/proc/self/fd/${fh.fd}`))?.[1] ?? 'nsfs';
  } finally {
    await fh.close();
  }
}

/** Finds out what `path` names (it follows symbolic links, as setns on the path would). */
export async function probeNetns(path: string): Promise<NetnsProbe> {
  let st;
  try {
    st = await stat(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return { kind: 'missing', what: 'does not exist' };
    return { kind: 'other', what: `unreadable (${code ?? (err as Error).message})` };
  }
  if (!st.isFile()) return { kind: 'other', what: fileKind(st) };
  const self = await nsId(SELF_NET);
  if (!self) return { kind: 'other', what: `not comparable with ${SELF_NET}, which is unreadable` };
  if (st.dev !== self.dev) return { kind: 'other', what: 'a regular file' };
  let type: string | undefined;
  try {
    type = await nsType(path, st.dev, st.ino);
  } catch (err) {
    return { kind: 'other', what: `a namespace file that cannot be opened (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})` };
  }
  if (type === undefined) return { kind: 'other', what: 'a file that changed while it was being checked' };
  if (type !== 'net') return { kind: 'other', what: type === 'nsfs' ? 'an nsfs file of no known type' : `a ${type} namespace` };
  if (st.ino === self.ino) return { kind: 'own', what: "this process's own network namespace", inode: st.ino };
  const init = await nsId(INIT_NET);
  if (init && st.ino === init.ino && st.dev === init.dev) return { kind: 'init', what: 'the network namespace of PID 1', inode: st.ino };
  return { kind: 'netns', what: 'a network namespace', inode: st.ino };
}
