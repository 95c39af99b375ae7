/**
 * Socket-level load balancing (--bpf-lb-sock): bpf_sock's cgroup programs (bpf/bpf_sock.c),
 * loaded against the LB maps the reconciler writes and the reverse-socket maps, attached to the
 * cgroup of --cgroup-root through bpf_links pinned under --bpf-root (links/sock_<hook>). A start
 * swaps the programs of the pinned links atomically (the hooks are never empty; while the agent is
 * down the old programs keep translating); a start with --bpf-lb-sock=false detaches them.
 * sockLBProblems finds links gone or detached since (the periodic check attaches them again).
 */
import { existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import {
  attachCgroup, BpfMap, BpfObject, CgroupAttachType, cgroupId, cgroupV2Mount, cgroupV2Problem, detachCgroup, objectPath, pinnedCgroupLink,
  type CgroupAttachment, type CgroupHook,
} from '../../bpf/index.js';
import { LB_MAP_NAMES } from '../../datapath/lb-maps.js';
import { IPCACHE_MAP } from '../../datapath/map-names.js';
import { openReverseSkMaps, REVERSE_SK_MAP_NAMES } from '../../maps/lb/index.js';
import type { MapReplacement } from '../../maps/ct/maps.js';
import { cgroupRootUnusable, noCgroupV2, sockObjectMissing } from './errors.js';

/** The program of each cgroup hook in bpf_sock.o. */
export const SOCK_PROGRAMS: Readonly<Record<CgroupHook, string>> = {
  connect4: 'sock4_connect', sendmsg4: 'sock4_sendmsg', recvmsg4: 'sock4_recvmsg', getpeername4: 'sock4_getpeername',
  connect6: 'sock6_connect', sendmsg6: 'sock6_sendmsg', recvmsg6: 'sock6_recvmsg', getpeername6: 'sock6_getpeername',
};

/** The hooks, in attach order (the reverse ones first: a translated socket always finds its way back). */
export const SOCK_HOOKS: readonly CgroupHook[] = ['recvmsg4', 'getpeername4', 'recvmsg6', 'getpeername6', 'connect4', 'sendmsg4', 'connect6', 'sendmsg6'];

/** Where the link of a hook is pinned under the BPF root. */
export function sockLinkPath(bpfRoot: string, hook: CgroupHook): string {
  return join(bpfRoot, 'links', `sock_${hook}`);
}

/**
 * The cgroup the programs attach to: --cgroup-root when set (it must be a cgroup v2 directory),
 * else the cgroup2 mount of /proc/mounts. Throws a ConfigError naming --cgroup-root and the fix.
 */
export function resolveCgroupRoot(flag: string, mounts?: string): string {
  if (flag) {
    const problem = cgroupV2Problem(flag);
    if (problem) throw cgroupRootUnusable(flag, problem);
    return flag;
  }
  const mount = cgroupV2Mount(mounts);
  if (!mount) throw noCgroupV2();
  const problem = cgroupV2Problem(mount);
  if (problem) throw cgroupRootUnusable(mount, `(the cgroup2 mount of /proc/mounts) ${problem}`);
  return mount;
}

/** Options of {@link attachSockLB}. */
export interface SockLBOptions {
  readonly bpfRoot: string;
  readonly cgroup: string;
  /** Entries of the reverse-socket maps (--bpf-sock-rev-map-max). */
  readonly revMapMax: number;
  /** Object file (default: the built build/bpf/bpf_sock.o). */
  readonly object?: string;
  readonly onReplace?: (r: MapReplacement) => void;
}

/** What an attach did, per hook. */
export type SockLBAttachment = Readonly<Record<CgroupHook, CgroupAttachment>>;

/**
 * Loads bpf_sock bound to the LB maps and the ipcache pinned under the BPF root (the reconciler's
 * and the datapath's, whatever their size) and the reverse-socket maps, and attaches (or atomically replaces) every program at the
 * cgroup. The LB maps must be pinned already (the loadbalancer cell's takeover opens them).
 */
export async function attachSockLB(o: SockLBOptions): Promise<SockLBAttachment> {
  const file = o.object ?? objectPath('bpf_sock');
  if (!existsSync(file)) throw sockObjectMissing(file);
  const maps: { name: string; map: BpfMap }[] = [];
  try {
    // the LB maps, and the ipcache (the node's own addresses: NodePort) at whatever size the datapath made it
    for (const name of [...Object.values(LB_MAP_NAMES), IPCACHE_MAP]) {
      const path = join(o.bpfRoot, name);
      if (existsSync(path)) maps.push({ name, map: BpfMap.openPinned(path) });
    }
    const rev = openReverseSkMaps(o.bpfRoot, o.revMapMax, o.onReplace);
    maps.push({ name: REVERSE_SK_MAP_NAMES.reverseSk4, map: rev.reverseSk4 }, { name: REVERSE_SK_MAP_NAMES.reverseSk6, map: rev.reverseSk6 });
    const obj = BpfObject.openCached(file, { name: 'bpf_sock', pinRoot: o.bpfRoot });
    try {
      for (const m of maps) obj.reuseMap(m.name, m.map.fd);
      await obj.loadAsync();
      mkdirSync(join(o.bpfRoot, 'links'), { recursive: true });
      const out: Partial<Record<CgroupHook, CgroupAttachment>> = {};
      for (const hook of SOCK_HOOKS) out[hook] = attachCgroup(obj.programFd(SOCK_PROGRAMS[hook]), { cgroup: o.cgroup, hook, pinPath: sockLinkPath(o.bpfRoot, hook) });
      return out as SockLBAttachment;
    } finally {
      obj.close();
    }
  } finally {
    for (const m of maps) m.map.close();
  }
}

/**
 * Detaches every socket program pinned under the BPF root (links/sock_*) and unpins the
 * reverse-socket maps only they used (LRU maps hold their memory whether used or not); how many
 * programs there were.
 */
export function detachSockLB(bpfRoot: string): number {
  const dir = join(bpfRoot, 'links');
  let n = 0;
  if (existsSync(dir)) for (const f of readdirSync(dir)) if (/^sock_/.test(f) && detachCgroup(join(dir, f))) n++;
  for (const name of Object.values(REVERSE_SK_MAP_NAMES)) rmSync(join(bpfRoot, name), { force: true });
  return n;
}

/**
 * What is wrong with the socket programs attached at `cgroup` (one line per hook: a link pin
 * missing, or its link no longer attached there); empty when every hook has its link.
 */
export function sockLBProblems(bpfRoot: string, cgroup: string): string[] {
  let id: number;
  try {
    id = cgroupId(cgroup);
  } catch (err) {
    return [`the cgroup ${cgroup} cannot be read (${(err as Error).message})`];
  }
  const out: string[] = [];
  for (const hook of SOCK_HOOKS) {
    const path = sockLinkPath(bpfRoot, hook);
    try {
      const l = pinnedCgroupLink(path);
      if (!l) out.push(`${hook}: no link pinned at ${path}`);
      else if (l.cgroupId !== id || l.attachType !== CgroupAttachType[hook]) out.push(`${hook}: the link pinned at ${path} is no longer attached to ${cgroup}`);
    } catch (err) {
      out.push(`${hook}: ${(err as Error).message}`);
    }
  }
  return out;
}
