/**
 * Attaching sched_cls programs to an interface, at tc ingress or egress: tcx links (kernel >=
 * 6.6), pinned so they survive an agent restart and updated atomically on reload; otherwise the
 * legacy clsact qdisc with a direct-action filter (handle/priority 1), replaced atomically with
 * BPF_TC_F_REPLACE. Either way a reload never leaves a window without a program.
 */
import { existsSync, rmSync } from 'node:fs';
import { sys, sysAsync } from './errors.js';
import { loadAddon, type BpfAddon } from './native.js';

/** The tc hook: ingress (packets received by the interface) or egress (sent by it). */
export type TcHook = 'ingress' | 'egress';

/** How programs are attached: 'auto' tries tcx then falls back to legacy tc. */
export type AttachMode = 'auto' | 'tcx' | 'legacy';

/** Where and how to attach. */
export interface TcTarget {
  readonly ifindex: number;
  readonly hook: TcHook;
  /** Network namespace path of the interface (default: the agent's). */
  readonly netns?: string;
  /** bpffs path of the tcx link pin (needed to keep and later replace a tcx attachment). */
  readonly pinPath?: string;
  readonly mode?: AttachMode;
  /** Legacy filter handle and priority (default 1 and 1). */
  readonly handle?: number;
  readonly priority?: number;
  /** The id of the program attached, when the caller knows it (else it is asked of the kernel). */
  readonly progId?: number;
}

/** The result of an attach. */
export interface TcAttachment {
  readonly mode: 'tcx' | 'legacy';
  readonly progId: number;
  /** tcx link id. */
  readonly linkId?: number;
  /** Whether an existing attachment was replaced atomically. */
  readonly replaced: boolean;
  /** An unpinned tcx link's fd: the program stays attached until this fd is closed (closeFd). */
  readonly linkFd?: number;
}

const TCX_UNSUPPORTED = new Set(['EINVAL', 'EOPNOTSUPP', 'ENOTSUPP', 'ENOSYS']);

function code(err: unknown): string | undefined {
  return (err as { code?: string }).code;
}

/** Replaces the program of the tcx link pinned at `path`; false when there is no usable link there. */
function updatePinnedLink(a: BpfAddon, path: string, progFd: number, ifindex: number): number | undefined {
  if (!existsSync(path)) return undefined;
  let fd: number;
  try {
    fd = sys(() => a.objGet(path));
  } catch {
    rmSync(path, { force: true });
    return undefined;
  }
  try {
    const info = sys(() => a.linkInfo(fd));
    if (info.ifindex !== ifindex) return undefined;
    sys(() => a.linkUpdate(fd, progFd));
    return info.id;
  } catch (err) {
    if (code(err) !== 'ENOLINK') throw err;
    return undefined;
  } finally {
    a.close(fd);
  }
}

/**
 * Attaches (or atomically replaces) `progFd` at the target. The kernel's part runs on a worker
 * thread: a first attach waits for an RCU grace period, which must not stall the event loop.
 */
export async function attachTc(progFd: number, t: TcTarget): Promise<TcAttachment> {
  const a = loadAddon();
  const mode = t.mode ?? 'auto';
  const ingress = t.hook === 'ingress';
  const progId = t.progId ?? sys(() => a.progInfo(progFd)).id;
  if (mode !== 'legacy') {
    if (t.pinPath) {
      const linkId = updatePinnedLink(a, t.pinPath, progFd, t.ifindex);
      if (linkId !== undefined) return { mode: 'tcx', progId, linkId, replaced: true };
    }
    let linkFd: number | undefined;
    try {
      linkFd = await sysAsync(() => a.tcxAttach(progFd, t.ifindex, ingress, t.netns));
    } catch (err) {
      if (mode === 'tcx' || !TCX_UNSUPPORTED.has(code(err) ?? '')) throw err;
    }
    if (linkFd !== undefined) {
      const fd = linkFd;
      const linkId = sys(() => a.linkInfo(fd)).id;
      if (!t.pinPath) return { mode: 'tcx', progId, linkId, replaced: false, linkFd: fd };
      try {
        rmSync(t.pinPath, { force: true });
        sys(() => a.objPin(fd, t.pinPath!));
      } catch (err) {
        a.close(fd);
        throw err;
      }
      a.close(fd);
      // A program attached before with legacy tc (mode switch) would run too: remove it.
      sys(() => a.tcDetach(t.ifindex, ingress, t.handle ?? 1, t.priority ?? 1, t.netns));
      return { mode: 'tcx', progId, linkId, replaced: false };
    }
  }
  // an exclusive create first (one netlink round trip for a new interface); EEXIST: replace atomically
  const tcAttach = (replace: boolean) => sysAsync(() => a.tcAttach(progFd, t.ifindex, ingress, t.handle ?? 1, t.priority ?? 1, replace, t.netns));
  let had = false;
  try {
    await tcAttach(false);
  } catch (err) {
    if (code(err) !== 'EEXIST') throw err;
    had = true;
    await tcAttach(true);
  }
  // A program attached before through a tcx link (mode switch) would run too: detach it.
  if (t.pinPath && existsSync(t.pinPath)) detachTc({ ifindex: 0, hook: t.hook, netns: t.netns, pinPath: t.pinPath });
  return { mode: 'legacy', progId, replaced: had };
}

/**
 * Detaches whatever Cellium attached at the target: the tcx link pinned at pinPath (its pin is
 * removed) and the legacy filter (skipped when ifindex is 0: the interface is gone). Returns whether anything was removed; missing things are fine.
 */
export function detachTc(t: TcTarget): boolean {
  const a = loadAddon();
  let removed = false;
  if (t.pinPath && existsSync(t.pinPath)) {
    try {
      const fd = sys(() => a.objGet(t.pinPath!));
      try {
        sys(() => a.linkDetach(fd));
        removed = true;
      } catch (err) {
        if (code(err) !== 'ENOLINK') throw err;
      } finally {
        a.close(fd);
      }
    } finally {
      rmSync(t.pinPath, { force: true });
    }
  }
  if (t.ifindex > 0 && sys(() => a.tcDetach(t.ifindex, t.hook === 'ingress', t.handle ?? 1, t.priority ?? 1, t.netns))) removed = true;
  return removed;
}

/** Program ids attached at the target by tcx, in order (one BPF_PROG_QUERY; empty where the kernel has no tcx). */
export function tcxPrograms(t: TcTarget): number[] {
  try {
    return sys(() => loadAddon().tcxQuery(t.ifindex, t.hook === 'ingress', t.netns));
  } catch (err) {
    if (!TCX_UNSUPPORTED.has(code(err) ?? '')) throw err;
    return [];
  }
}

/** Program ids attached at the target: tcx ones in order, then the legacy filter's (when any). */
export function attachedPrograms(t: TcTarget): { tcx: number[]; legacy?: number } {
  const tcx = tcxPrograms(t);
  const legacy = sys(() => loadAddon().tcQuery(t.ifindex, t.hook === 'ingress', t.handle ?? 1, t.priority ?? 1, t.netns));
  return legacy ? { tcx, legacy } : { tcx };
}

/**
 * Whether program `progId` runs at the target: by tcx (a syscall) first, the legacy filter
 * (a netlink dump of the interface's filters) only when tcx does not have it; the other way round
 * when the target's mode is `legacy` (where the program was attached: the tcx query, which takes
 * the kernel's rtnl lock, is then only asked when the filter does not have it). Returns the ids
 * found when it does not run there.
 */
export function programAttached(t: TcTarget, progId: number): true | number[] {
  const legacyFirst = t.mode === 'legacy';
  const legacy = legacyFirst ? tcLegacyProgram(t) : undefined;
  if (legacy === progId) return true;
  const tcx = tcxPrograms(t);
  if (tcx.includes(progId)) return true;
  const late = legacyFirst ? legacy : tcLegacyProgram(t);
  if (late === progId) return true;
  return late ? [...tcx, late] : tcx;
}

/** The id of the legacy filter's program at the target (undefined: none). */
function tcLegacyProgram(t: TcTarget): number | undefined {
  return sys(() => loadAddon().tcQuery(t.ifindex, t.hook === 'ingress', t.handle ?? 1, t.priority ?? 1, t.netns)) || undefined;
}

/** Closes an fd returned by the layer (an unpinned link's linkFd). */
export function closeFd(fd: number): void {
  loadAddon().close(fd);
}
