/**
 * What a path names, as far as network namespaces go, found without entering it and without
 * privileges: a namespace file is an inode of the nsfs pseudo-filesystem (the same device as
 * /proc/self/ns/net), the NS_GET_NSTYPE ioctl (the addon's `nsType`) gives its type, and its inode
 * number identifies the namespace. Regular files on other filesystems, directories and devices are
 * refused from stat() alone and never opened (opening a FIFO blocks, opening some devices acts).
 */
import { stat } from 'node:fs/promises';
import { errnoName } from './errors.js';
import { loadAddon } from './native.js';

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

const SELF_NET = '/proc/self/ns/net';
const INIT_NET = '/proc/1/ns/net';
const CLONE_NEWNET = 0x40000000;
/** Namespace types by their CLONE_NEW* flag, as /proc/PID/ns names them. */
const NS_TYPES: Readonly<Record<number, string>> = {
  0x00020000: 'mnt',
  0x04000000: 'uts',
  0x08000000: 'ipc',
  0x10000000: 'user',
  0x20000000: 'pid',
  [CLONE_NEWNET]: 'net',
  0x02000000: 'cgroup',
  0x00000080: 'time',
};

type NsId = { dev: number; ino: number } | undefined;

async function nsId(path: string): Promise<NsId> {
  try {
    const st = await stat(path);
    return { dev: st.dev, ino: st.ino };
  } catch {
    return undefined;
  }
}

// This process's namespace and PID 1's never change (no thread of the agent joins another one for
// good), so they are read once; a failed read is tried again next time.
const known = new Map<string, Promise<NsId>>();
function cachedNsId(path: string): Promise<NsId> {
  let got = known.get(path);
  if (!got) {
    got = nsId(path).then((id) => {
      if (!id) known.delete(path);
      return id;
    });
    known.set(path, got);
  }
  return got;
}

function fileKind(st: Awaited<ReturnType<typeof stat>>): string {
  if (st.isDirectory()) return 'a directory';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  if (st.isFIFO()) return 'a FIFO';
  if (st.isSocket()) return 'a socket';
  return 'a regular file';
}

/** Finds out what `path` names (following symbolic links, as setns on the path would). */
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
  const self = await cachedNsId(SELF_NET);
  if (!self) return { kind: 'other', what: `not comparable with ${SELF_NET}, which is unreadable` };
  if (st.dev !== self.dev) return { kind: 'other', what: 'a regular file' };
  // an nsfs file: opening it has no side effect
  const ns = loadAddon().nsType(path);
  if (ns.type === undefined) return { kind: 'other', what: `a namespace file that cannot be inspected (${errnoName(ns.errno)})` };
  if (ns.dev !== st.dev || ns.ino !== st.ino) return { kind: 'other', what: 'a file that changed while it was being checked' };
  if (ns.type !== CLONE_NEWNET) return { kind: 'other', what: `a ${NS_TYPES[ns.type] ?? `type ${ns.type}`} namespace` };
  if (st.ino === self.ino) return { kind: 'own', what: "this process's own network namespace", inode: st.ino };
  const init = await cachedNsId(INIT_NET);
  if (init && st.ino === init.ino && st.dev === init.dev) return { kind: 'init', what: 'the network namespace of PID 1', inode: st.ino };
  return { kind: 'netns', what: 'a network namespace', inode: st.ino };
}
