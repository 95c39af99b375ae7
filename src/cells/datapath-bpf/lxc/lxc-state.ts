/**
 * What is attached to an endpoint's interface right now, read from the kernel: the programs at
 * each hook and the .rodata constants they were loaded with, so "is this endpoint loaded with
 * exactly this configuration" (Loader.isLoaded) is answered by the kernel, across agent restarts.
 */
import type { CtTimeouts } from '../../../datapath/conntrack.js';
import type { EndpointDatapathConfig } from '../../../datapath/types.js';
import { attachedPrograms } from '../../../bpf/attach.js';
import { BpfMap } from '../../../bpf/bpf-map.js';
import { sys } from '../../../bpf/errors.js';
import { LXC_PROGRAMS, endpointIdConstant, lxcConstants } from './lxc.js';
import { loadAddon, objectPath, type RawVariable } from '../../../bpf/native.js';
import { BpfObject } from '../../../bpf/object.js';

let variables: RawVariable[] | undefined;

/** The .rodata layout of the built bpf_lxc (read once). */
function lxcVariables(): RawVariable[] {
  if (!variables) {
    const obj = BpfObject.openCached(objectPath('bpf_lxc'), { name: 'bpf_lxc' });
    try {
      variables = obj.variables();
    } finally {
      obj.close();
    }
  }
  return variables;
}

/** The ids of the maps the loaded program `progId` uses. */
export function programMapIds(progId: number): number[] {
  const a = loadAddon();
  const fd = sys(() => a.progGetFdById(progId));
  try {
    return sys(() => a.progInfo(fd)).mapIds;
  } finally {
    a.close(fd);
  }
}

/** The .rodata constants of the loaded program `progId`, by variable name (undefined when it has none). */
export function programConstants(progId: number): Record<string, Buffer> | undefined {
  const a = loadAddon();
  for (const id of programMapIds(progId)) {
    const m = BpfMap.fromFd(sys(() => a.mapGetFdById(id)));
    try {
      if (!m.info.name.endsWith('.rodata')) continue;
      const value = m.lookup(Buffer.alloc(4));
      if (!value) return undefined;
      const out: Record<string, Buffer> = {};
      for (const v of lxcVariables()) out[v.name] = Buffer.from(value.subarray(v.offset, v.offset + v.size));
      return out;
    } finally {
      m.close();
    }
  }
  return undefined;
}

/**
 * Whether bpf_lxc is attached to cfg.ifIndex exactly once at both hooks, loaded with the constants
 * of `cfg` (endpoint id, identity, addresses, ifindex, MACs, conntrack switches) and conntrack
 * lifetimes `timeouts` and, when `mapIds` is given, bound to every one of those maps (e.g. the
 * endpoint's pinned policy map and the shared maps).
 */
export function isEndpointLoaded(cfg: EndpointDatapathConfig, netns?: string, mapIds: readonly number[] = [], timeouts?: CtTimeouts, object?: string | Buffer): boolean {
  const want = lxcConstants(cfg, timeouts, object);
  for (const hook of Object.values(LXC_PROGRAMS)) {
    let progs: { tcx: number[]; legacy?: number };
    try {
      progs = attachedPrograms({ ifindex: cfg.ifIndex, hook, netns });
    } catch (err) {
      if ((err as { code?: string }).code === 'ENODEV') return false;
      throw err;
    }
    const ids = [...progs.tcx, ...(progs.legacy ? [progs.legacy] : [])];
    if (ids.length !== 1) return false;
    const have = programConstants(ids[0]!);
    if (!have || Object.entries(want).some(([name, v]) => !have[name]?.equals(v))) return false;
    if (mapIds.length) {
      const bound = new Set(programMapIds(ids[0]!));
      if (mapIds.some((id) => !bound.has(id))) return false;
    }
  }
  return true;
}

/**
 * Whether the loaded program `progId` is bpf_lxc of endpoint `endpointId` (its endpoint_id
 * constant) bound to every map of `mapIds` (e.g. an agent's ipcache: then it is that agent's).
 * A program that is gone answers false.
 */
export function isEndpointProgram(progId: number, endpointId: number, mapIds: readonly number[] = []): boolean {
  let have: Record<string, Buffer> | undefined;
  try {
    have = programConstants(progId);
  } catch (err) {
    if ((err as { code?: string }).code === 'ENOENT') return false;
    throw err;
  }
  if (!have?.endpoint_id?.equals(endpointIdConstant(endpointId))) return false;
  const bound = new Set(programMapIds(progId));
  return mapIds.every((id) => bound.has(id));
}
