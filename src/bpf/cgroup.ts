/**
 * Cgroup programs (socket-level load balancing) attached to a cgroup v2 directory through pinned
 * bpf_links: the pin keeps the program attached while the agent is down, and the next attach
 * swaps the program of the same link atomically (bpf_link_update), so the hook is never empty.
 * Also where cgroup v2 is mounted and whether a directory is a cgroup v2 one.
 */
import { existsSync, readFileSync, renameSync, rmSync, statfsSync, statSync } from 'node:fs';
import { sys } from './errors.js';
import { loadAddon } from './native.js';

/** The cgroup attach types of the socket programs (enum bpf_attach_type). */
export const CgroupAttachType = {
  connect4: 10, connect6: 11, sendmsg4: 14, sendmsg6: 15, recvmsg4: 19, recvmsg6: 20, getpeername4: 29, getpeername6: 30,
} as const;

/** A hook of {@link CgroupAttachType}. */
export type CgroupHook = keyof typeof CgroupAttachType;

/** statfs f_type of a cgroup v2 file system. */
const CGROUP2_SUPER_MAGIC = 0x63677270;

/** The first cgroup2 mount point in a /proc/mounts text (e.g. /sys/fs/cgroup, or /sys/fs/cgroup/unified with hybrid cgroups). */
export function cgroupV2Mount(mounts: string = readFileSync('/proc/mounts', 'utf8')): string | undefined {
  for (const line of mounts.split('\n')) {
    const f = line.split(' ');
    // octal escapes of /proc/mounts (\040 a space) back to characters
    if (f[2] === 'cgroup2' && f[1]) return f[1].replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
  }
  return undefined;
}

/** Why `path` is not a cgroup v2 directory one can attach to, or undefined when it is. */
export function cgroupV2Problem(path: string): string | undefined {
  try {
    if (!statSync(path).isDirectory()) return 'is not a directory';
    return statfsSync(path).type === CGROUP2_SUPER_MAGIC ? undefined : 'is not on a cgroup v2 file system (cgroup2)';
  } catch (err) {
    return (err as { code?: string }).code === 'ENOENT' ? 'does not exist' : `cannot be read (${(err as Error).message})`;
  }
}

/** A cgroup v2 directory's id (its inode number), what a cgroup link's info names. */
export function cgroupId(path: string): number {
  return Number(statSync(path, { bigint: true }).ino);
}

/** Where and how a cgroup program is attached. */
export interface CgroupTarget {
  /** The cgroup v2 directory. */
  readonly cgroup: string;
  readonly hook: CgroupHook;
  /** bpffs path of the link's pin. */
  readonly pinPath: string;
}

/** What attachCgroup did. */
export interface CgroupAttachment {
  readonly progId: number;
  readonly linkId: number;
  /** The program of an existing link at the pin was swapped atomically (else a new link was made). */
  readonly replaced: boolean;
  /** A link pinned there before for another cgroup or hook was replaced by the new one. */
  readonly moved: boolean;
}

function code(err: unknown): string | undefined {
  return (err as { code?: string }).code;
}

/**
 * Attaches `progFd` at the target: the link pinned at pinPath, when it is attached to that cgroup
 * and hook, gets the program swapped atomically; otherwise a new link is made and pinned beside,
 * then renamed over the old pin (whose link, for another cgroup or no longer attached, is
 * released with it).
 */
export function attachCgroup(progFd: number, t: CgroupTarget): CgroupAttachment {
  const a = loadAddon();
  const type = CgroupAttachType[t.hook];
  const progId = sys(() => a.progInfo(progFd)).id;
  const id = cgroupId(t.cgroup);
  let had = false;
  if (existsSync(t.pinPath)) {
    had = true;
    let fd: number | undefined;
    try {
      fd = sys(() => a.objGet(t.pinPath));
    } catch {
      fd = undefined;
    }
    if (fd !== undefined) {
      try {
        const info = sys(() => a.linkInfo(fd!));
        if (info.cgroupId === id && info.attachType === type) {
          sys(() => a.linkUpdate(fd!, progFd));
          return { progId, linkId: info.id, replaced: true, moved: false };
        }
      } catch (err) {
        if (code(err) !== 'ENOLINK') throw err;
      } finally {
        a.close(fd);
      }
    }
  }
  const link = sys(() => a.cgroupAttach(progFd, t.cgroup, type));
  try {
    const linkId = sys(() => a.linkInfo(link)).id;
    const tmp = `${t.pinPath}_new`; // bpffs names may not hold a dot
    rmSync(tmp, { force: true });
    sys(() => a.objPin(link, tmp));
    renameSync(tmp, t.pinPath);
    return { progId, linkId, replaced: false, moved: had };
  } finally {
    a.close(link);
  }
}

/** Detaches the link pinned at pinPath and removes the pin; false when there was none. */
export function detachCgroup(pinPath: string): boolean {
  if (!existsSync(pinPath)) return false;
  const a = loadAddon();
  try {
    const fd = sys(() => a.objGet(pinPath));
    try {
      sys(() => a.linkDetach(fd));
    } catch (err) {
      if (code(err) !== 'ENOLINK') throw err;
    } finally {
      a.close(fd);
    }
  } finally {
    rmSync(pinPath, { force: true });
  }
  return true;
}

/** Ids of the programs attached at a hook of the cgroup itself (not inherited ones). */
export function cgroupPrograms(cgroup: string, hook: CgroupHook): number[] {
  return sys(() => loadAddon().cgroupQuery(cgroup, CgroupAttachType[hook]));
}

/** The link pinned at pinPath: its id, program and cgroup, or undefined when there is none. */
export function pinnedCgroupLink(pinPath: string): { linkId: number; progId: number; cgroupId: number; attachType: number } | undefined {
  if (!existsSync(pinPath)) return undefined;
  const a = loadAddon();
  const fd = sys(() => a.objGet(pinPath));
  try {
    const info = sys(() => a.linkInfo(fd));
    return { linkId: info.id, progId: info.progId, cgroupId: info.cgroupId ?? 0, attachType: info.attachType };
  } finally {
    a.close(fd);
  }
}
