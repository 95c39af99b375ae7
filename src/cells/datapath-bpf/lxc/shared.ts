/**
 * The shared bpf_lxc: one copy per node (per configuration), verified once, that every endpoint's
 * host-side veth attaches. What the per-endpoint copy had as .rodata constants is the endpoint's
 * entry in cellium_endpoints (keyed by the host interface's index: the program reads
 * skb->ifindex, no parsing, one hash lookup of a u32; an address key would need the packet's
 * address first and would trust a forged source at egress), its policy map the slot of its ID in
 * cellium_policy_maps. ADD is then map writes and two attaches; the programs are pinned under
 * `<root>/progs/` so a restarted agent keeps them (and their ids) when its configuration is the same.
 */
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_CT_TIMEOUTS, type CtTimeouts } from '../../../datapath/conntrack.js';
import type { EndpointDatapathConfig } from '../../../datapath/types.js';
import { attachTc, type AttachMode, type TcAttachment } from '../../../bpf/attach.js';
import { sys } from '../../../bpf/errors.js';
import { loadAddon, objectPath } from '../../../bpf/native.js';
import { BpfObject } from '../../../bpf/object.js';
import { ENDPOINT_F_CT_DISABLED, ENDPOINT_F_NO_ACCOUNTING, openEndpointsMap, PolicyMapsMap, type EndpointInfo, type EndpointsMap } from '../../../maps/endpoints/index.js';
import { openPolicyMap, policyMapPath } from '../../../maps/policy/map.js';
import { ENDPOINTS_MAP, POLICY_MAPS_MAP } from '../../../datapath/map-names.js';
import { OBJECT_POLICY_MAP } from '../../../maps/policy/layout.js';
import { LXC_PROGRAMS, ctConstants, lxcBuildId, lxcLinkPath, unloadEndpointProgram, type LxcLoadOptions, type LxcLoadResult, type LxcUnloadOptions } from './lxc.js';

type LxcProgram = keyof typeof LXC_PROGRAMS;
const PROGRAM_NAMES = Object.keys(LXC_PROGRAMS) as LxcProgram[];

/** The .rodata constants of the shared program: lxc_shared = 1 and the node-wide conntrack settings. */
export function sharedConstants(timeouts: CtTimeouts = DEFAULT_CT_TIMEOUTS, object?: string | Buffer): Record<string, Buffer> {
  return { lxc_shared: Buffer.from([1]), ...ctConstants(timeouts), lxc_build: lxcBuildId(object) };
}

/** An endpoint's entry in cellium_endpoints (what the per-endpoint program had as constants). */
export function endpointInfo(cfg: EndpointDatapathConfig): EndpointInfo {
  const flags = (cfg.options?.Conntrack === 'Disabled' ? ENDPOINT_F_CT_DISABLED : 0) | (cfg.options?.ConntrackAccounting === 'Disabled' ? ENDPOINT_F_NO_ACCOUNTING : 0);
  return {
    identity: cfg.identity, endpointId: cfg.id, flags, ifIndex: cfg.ifIndex,
    ipv4: cfg.ipv4 ?? '', ipv6: cfg.ipv6 ?? '', mac: cfg.mac, hostMac: cfg.hostMac,
  };
}

/** The loaded shared programs (fds this process holds; close() releases them, attachments and pins keep them). */
export interface SharedProgram {
  readonly fds: Readonly<Record<LxcProgram, number>>;
  readonly ids: Readonly<Record<LxcProgram, number>>;
  /** Runs a program on one packet (BPF_PROG_TEST_RUN; skb->ifindex is the loopback's, 1). */
  testRun(name: LxcProgram, data: Buffer, repeat?: number): { retval: number; durationNs: number };
  close(): void;
}

/** Options of {@link loadSharedProgram}. */
export interface SharedLoadOptions {
  readonly bpfRoot: string;
  /** Object file (default: the built build/bpf/bpf_lxc.o) or its bytes. */
  readonly object?: string | Buffer;
  /** Maps to bind instead of the object's definitions, by the object's map name (fds the caller keeps). */
  readonly reuseMaps?: Readonly<Record<string, number>>;
  readonly ctTimeouts?: CtTimeouts;
}

/** Loads bpf_lxc once as the shared program (verifier and JIT on a libuv worker). */
export async function loadSharedProgram(o: SharedLoadOptions): Promise<SharedProgram> {
  const source = o.object ?? objectPath('bpf_lxc');
  const obj = typeof source === 'string' ? BpfObject.openCached(source, { name: 'bpf_lxc', pinRoot: o.bpfRoot }) : BpfObject.open(source, { name: 'bpf_lxc', pinRoot: o.bpfRoot });
  try {
    obj.setConstants(sharedConstants(o.ctTimeouts, source));
    for (const [name, fd] of Object.entries(o.reuseMaps ?? {})) obj.reuseMap(name, fd);
    await obj.loadAsync();
  } catch (err) {
    obj.close();
    throw err;
  }
  const a = loadAddon();
  const fds = Object.fromEntries(PROGRAM_NAMES.map((p) => [p, obj.programFd(p)])) as Record<LxcProgram, number>;
  const ids = Object.fromEntries(PROGRAM_NAMES.map((p) => [p, sys(() => a.progInfo(fds[p])).id])) as Record<LxcProgram, number>;
  return { fds, ids, testRun: (name, data, repeat = 1) => sys(() => a.progTestRun(fds[name], data, repeat)), close: () => obj.close() };
}

/** bpffs path of a shared program's pin. */
export function sharedProgramPath(bpfRoot: string, program: LxcProgram): string {
  return join(bpfRoot, 'progs', `lxc_${program}`);
}

/** Pins the shared programs under `<root>/progs/`, replacing what was pinned (pinned beside, then renamed over). */
export function pinSharedProgram(p: SharedProgram, bpfRoot: string): void {
  const a = loadAddon();
  mkdirSync(join(bpfRoot, 'progs'), { recursive: true });
  for (const prog of PROGRAM_NAMES) {
    const path = sharedProgramPath(bpfRoot, prog);
    const pending = `${path}_new`; // bpffs refuses names with a dot
    rmSync(pending, { force: true });
    sys(() => a.objPin(p.fds[prog], pending));
    renameSync(pending, path);
  }
}

/** The shared programs pinned under the root, or undefined when either pin is missing. */
export function openPinnedShared(bpfRoot: string): SharedProgram | undefined {
  if (!PROGRAM_NAMES.every((p) => existsSync(sharedProgramPath(bpfRoot, p)))) return undefined;
  const a = loadAddon();
  const fds: Partial<Record<LxcProgram, number>> = {};
  try {
    for (const p of PROGRAM_NAMES) fds[p] = sys(() => a.objGet(sharedProgramPath(bpfRoot, p)));
    const ids = Object.fromEntries(PROGRAM_NAMES.map((p) => [p, sys(() => a.progInfo(fds[p]!)).id])) as Record<LxcProgram, number>;
    const all = fds as Record<LxcProgram, number>;
    return {
      fds: all, ids, testRun: (name, data, repeat = 1) => sys(() => a.progTestRun(all[name], data, repeat)),
      close: () => PROGRAM_NAMES.forEach((p) => a.close(all[p])),
    };
  } catch (err) {
    for (const fd of Object.values(fds)) a.close(fd);
    if ((err as { code?: string }).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** Removes the shared programs' pins (attached interfaces keep running them); false when none. */
export function unpinSharedProgram(bpfRoot: string): boolean {
  let removed = false;
  for (const p of PROGRAM_NAMES) {
    const path = sharedProgramPath(bpfRoot, p);
    if (existsSync(path)) {
      rmSync(path, { force: true });
      removed = true;
    }
  }
  return removed;
}

/**
 * Writes an endpoint's entry and policy-map slot for the shared program: the slot first (the
 * program finds the policy map the entry's ID names), then the entry. Each write is atomic.
 */
export function writeSharedEndpoint(maps: { endpoints: EndpointsMap; policyMaps: PolicyMapsMap }, cfg: EndpointDatapathConfig, policyMapFd: number): void {
  maps.policyMaps.set(cfg.id, policyMapFd);
  maps.endpoints.set(cfg.ifIndex, endpointInfo(cfg));
}

/** Options of {@link attachShared}. */
export interface SharedAttachOptions {
  readonly bpfRoot: string;
  readonly netns?: string;
  readonly mode?: AttachMode;
}

/**
 * Attaches the shared programs to an endpoint's interface: tcx links pinned at the endpoint's link
 * paths (a link already there, e.g. of a per-endpoint program, gets the shared one by an atomic
 * link update), or legacy filters replaced atomically.
 */
export async function attachShared(p: SharedProgram, cfg: Pick<EndpointDatapathConfig, 'id' | 'ifIndex'>, o: SharedAttachOptions): Promise<Record<LxcProgram, TcAttachment>> {
  mkdirSync(join(o.bpfRoot, 'links'), { recursive: true });
  const attached = await Promise.all(PROGRAM_NAMES.map((prog) => attachTc(p.fds[prog], {
    ifindex: cfg.ifIndex, hook: LXC_PROGRAMS[prog], netns: o.netns, mode: o.mode, pinPath: lxcLinkPath(o.bpfRoot, cfg.id, prog), progId: p.ids[prog],
  })));
  return Object.fromEntries(PROGRAM_NAMES.map((prog, i) => [prog, attached[i]!])) as Record<LxcProgram, TcAttachment>;
}

/**
 * The shared program for one endpoint, outside the agent (tests, benches): writes the endpoint's
 * entry and slot in the pinned cellium_endpoints / cellium_policy_maps (its policy map: the
 * `cellium_policy` fd of reuseMaps, else its pinned cellium_policy_<id>, created when missing),
 * loads the shared program bound to them and `reuseMaps`, and, unless `attach` is false, attaches
 * it to cfg.ifIndex. The caller closes the returned program.
 */
export async function loadSharedForEndpoint(cfg: EndpointDatapathConfig, o: LxcLoadOptions, attach = true): Promise<{ program: SharedProgram; result?: LxcLoadResult }> {
  const endpoints = openEndpointsMap(o.bpfRoot);
  const policyMaps = PolicyMapsMap.open(o.bpfRoot);
  const ownPolicy = o.reuseMaps?.[OBJECT_POLICY_MAP] === undefined ? openPolicyMap(o.bpfRoot, cfg.id) : undefined;
  try {
    writeSharedEndpoint({ endpoints, policyMaps }, cfg, o.reuseMaps?.[OBJECT_POLICY_MAP] ?? ownPolicy!.map.fd);
    const { [OBJECT_POLICY_MAP]: _policy, ...rest } = o.reuseMaps ?? {};
    const program = await loadSharedProgram({
      bpfRoot: o.bpfRoot, object: o.object, ctTimeouts: o.ctTimeouts,
      reuseMaps: { ...rest, [ENDPOINTS_MAP]: endpoints.map.fd, [POLICY_MAPS_MAP]: policyMaps.map.fd },
    });
    if (!attach) return { program };
    try {
      const attachments = await attachShared(program, cfg, o);
      return { program, result: { policyMapPath: policyMapPath(o.bpfRoot, cfg.id), attachments } };
    } catch (err) {
      program.close();
      throw err;
    }
  } finally {
    ownPolicy?.close();
    endpoints.close();
    policyMaps.close();
  }
}

/**
 * Detaches an endpoint's programs (as unloadEndpointProgram) and removes its entry from the shared
 * program's maps: the cellium_endpoints entry of ifIndex when it is this endpoint's, and its slot.
 */
export function unloadSharedEndpoint(endpointId: number, ifIndex: number, o: LxcUnloadOptions): boolean {
  let removed = unloadEndpointProgram(endpointId, ifIndex, o);
  const endpoints = openEndpointsMap(o.bpfRoot);
  const policyMaps = PolicyMapsMap.open(o.bpfRoot);
  try {
    if (endpoints.get(ifIndex)?.endpointId === endpointId) removed = endpoints.delete(ifIndex) || removed;
    removed = policyMaps.delete(endpointId) || removed;
  } finally {
    endpoints.close();
    policyMaps.close();
  }
  return removed;
}
