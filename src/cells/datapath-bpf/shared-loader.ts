/**
 * The BPF loader's shared-program part (--bpf-lxc-program=shared): the node's one bpf_lxc, loaded
 * once per configuration (its constants and the ids of the maps it is bound to) and pinned, so a
 * restarted agent with the same configuration keeps it; an endpoint's load writes its
 * cellium_endpoints entry and policy-map slot, then attaches the program unless it already runs
 * there (a per-endpoint program, or an older shared one, is replaced atomically per link). A
 * configuration that needs another program (other lifetimes, maps recreated) loads it once; every
 * endpoint's next load swaps its links to it.
 */
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { BpfMap, type AttachMode } from '../../bpf/index.js';
import { LB_MAP_NAMES } from '../../datapath/lb-maps.js';
import { ENDPOINTS_MAP, IPCACHE_MAP, LXC_MAP, POLICY_MAPS_MAP } from '../../datapath/map-names.js';
import type { CtTimeouts } from '../../datapath/conntrack.js';
import type { EndpointDatapathConfig } from '../../datapath/types.js';
import {
  LXC_PROGRAMS, attachShared, endpointInfo, endpointPrograms, loadSharedProgram, openPinnedShared, pinSharedProgram, programConstants, programMapIds,
  sharedConstants, type SharedProgram,
} from './lxc/index.js';
import type { KernelMaps } from './kernel-maps.js';
import type { PolicyGroups } from './policy-groups.js';

type LxcProgram = keyof typeof LXC_PROGRAMS;

/** The LB maps pinned under the BPF root, opened for one load (none: the object's own are pinned). */
export function openPinnedLBMaps(root: string): { name: string; map: BpfMap }[] {
  const out: { name: string; map: BpfMap }[] = [];
  try {
    for (const name of Object.values(LB_MAP_NAMES)) {
      const path = join(root, name);
      if (existsSync(path)) out.push({ name, map: BpfMap.openPinned(path) });
    }
  } catch (err) {
    for (const m of out) m.map.close();
    throw err;
  }
  return out;
}

/** Whether the loaded program `progId` is a shared bpf_lxc (its lxc_shared constant) bound to every map of `mapIds`. */
export function isSharedProgram(progId: number, mapIds: readonly number[] = []): boolean {
  let have: Record<string, Buffer> | undefined;
  try {
    have = programConstants(progId);
  } catch (err) {
    if ((err as { code?: string }).code === 'ENOENT') return false;
    throw err;
  }
  if (have?.lxc_shared?.[0] !== 1) return false;
  const bound = new Set(programMapIds(progId));
  return mapIds.every((id) => bound.has(id));
}

/** The shared program of this agent and what an endpoint's load does with it. */
export class SharedLxc {
  private current?: { key: string; quick: string; program: SharedProgram };
  private pending?: { key: string; promise: Promise<SharedProgram> };
  /** How many times the shared program was loaded (verified) by this agent. */
  loads = 0;
  /**
   * The program's constants, worked out once (the object's build id hashes the file, the lifetimes
   * are this agent's): every endpoint's load compares them, and the ELF a load uses is the one this
   * process read first anyway (BpfObject.openCached).
   */
  private readonly constants: Record<string, Buffer>;
  private readonly constantsText: string;

  constructor(
    private readonly kernel: KernelMaps,
    private readonly opts: { readonly object?: string; readonly mode?: AttachMode; readonly ctTimeouts?: CtTimeouts },
    /** The shared policy maps: which map an endpoint's slot points at. */
    readonly groups: PolicyGroups,
  ) {
    this.constants = sharedConstants(opts.ctTimeouts, opts.object);
    this.constantsText = Object.values(this.constants).map((v) => v.toString('hex')).join(',');
  }

  /** The ids of the shared program's two halves, when one is loaded. */
  get ids(): Readonly<Record<LxcProgram, number>> | undefined {
    return this.current?.program.ids;
  }

  /**
   * The shared program for the maps open now: the current one, a pinned one with the same
   * constants and maps (a restart), or a new load (once, however many endpoints ask meanwhile).
   */
  async program(): Promise<SharedProgram> {
    // the common case, every endpoint load: nothing changed since the current program was chosen
    // (the LB maps' pins are the same files, this agent's own maps the same maps): no pin opened
    const quick = this.quickKey();
    if (this.current && this.current.quick === quick) return this.current.program;
    const lb = openPinnedLBMaps(this.kernel.root);
    try {
      const maps = this.maps(lb);
      const ids = this.mapIds(lb);
      const constants = this.constants;
      const key = JSON.stringify([ids, Object.entries(constants).map(([n, v]) => [n, v.toString('hex')])]);
      if (this.current?.key === key) return this.current.program;
      if (this.pending?.key !== key) {
        const promise = this.obtain(maps, ids, constants);
        this.pending = { key, promise };
        promise.catch(() => undefined).finally(() => {
          if (this.pending?.promise === promise) this.pending = undefined;
        });
      }
      const program = await this.pending!.promise;
      if (this.current?.program !== program) this.current?.program.close();
      this.current = { key, quick, program };
      return program;
    } finally {
      for (const m of lb) m.map.close();
    }
  }

  private async obtain(maps: Record<string, number>, ids: readonly number[], constants: Record<string, Buffer>): Promise<SharedProgram> {
    const pinned = openPinnedShared(this.kernel.root);
    if (pinned) {
      const have = programConstants(pinned.ids.from_container);
      const bound = new Set([...programMapIds(pinned.ids.from_container), ...programMapIds(pinned.ids.to_container)]);
      if (have && Object.entries(constants).every(([n, v]) => have[n]?.equals(v)) && ids.every((id) => bound.has(id))) return pinned;
      pinned.close();
    }
    const program = await loadSharedProgram({ bpfRoot: this.kernel.root, object: this.opts.object, ctTimeouts: this.opts.ctTimeouts, reuseMaps: maps });
    try {
      pinSharedProgram(program, this.kernel.root);
    } catch (err) {
      program.close();
      throw err;
    }
    this.loads++;
    return program;
  }

  /**
   * What the choice of program depends on, without opening a pin: the inode of each LB map's pin
   * (a map pinned anew is a new bpffs inode), the ids of this agent's maps and the constants.
   */
  private quickKey(): string {
    const pins = Object.values(LB_MAP_NAMES).map((name) => statSync(join(this.kernel.root, name), { throwIfNoEntry: false })?.ino ?? 0);
    const k = this.kernel;
    const own = [k.ipcache.map.info.id, k.endpoints.map.info.id, k.policySlots.map.info.id, ...k.ct.ids(), ...k.sharedIds()];
    return `${pins.join(',')}|${own.join(',')}|${this.constantsText}`;
  }

  /** The maps the shared program binds, by the object's names. */
  private maps(lb: readonly { name: string; map: BpfMap }[]): Record<string, number> {
    const k = this.kernel;
    return {
      [LXC_MAP]: k.lxc.map.fd, [IPCACHE_MAP]: k.ipcache.map.fd, [ENDPOINTS_MAP]: k.endpoints.map.fd, [POLICY_MAPS_MAP]: k.policySlots.map.fd,
      ...k.ct.fds(), ...k.sharedFds(), ...Object.fromEntries(lb.map((m) => [m.name, m.map.fd])),
    };
  }

  /** The ids of the maps the program reads (cellium_lxc it does not: the kernel does not list it). */
  private mapIds(lb: readonly { name: string; map: BpfMap }[]): number[] {
    const k = this.kernel;
    return [k.ipcache.map.info.id, k.endpoints.map.info.id, k.policySlots.map.info.id, ...k.ct.ids(), ...k.sharedIds(), ...lb.map((m) => m.map.info.id)].sort((a, b) => a - b);
  }

  /**
   * An endpoint's load: its policy-map slot and entry written, the entry of an interface it had
   * before removed, then the shared program attached unless this loader attached it before
   * (`previousIfIndex`, the interface it was attached to) and both hooks run it already. Returns
   * the program ids at the hooks.
   */
  async load(cfg: EndpointDatapathConfig, previousIfIndex?: number): Promise<Record<LxcProgram, number>> {
    const program = await this.program();
    // the slot first (the program finds the policy map the entry's ID names), then the entry; the
    // slot's write is left to a worker once it reads back (its grace period blocks nobody). The
    // slot points at the endpoint's shared policy map (the empty policy's until it is realized)
    await this.groups.attach(cfg.id);
    this.kernel.endpoints.set(cfg.ifIndex, endpointInfo(cfg));
    if (previousIfIndex !== undefined && previousIfIndex !== cfg.ifIndex) this.forgetInterface(cfg.id, previousIfIndex);
    // an endpoint this loader never attached (a creation; a restore that found it not loaded) is
    // attached without asking the kernel first: the attach replaces whatever runs there atomically
    // (legacy: an exclusive create, on EEXIST a replace; tcx: the update of its pinned link), and
    // the question (a BPF_PROG_QUERY per hook under the kernel's rtnl lock, on the event loop, and a
    // netlink dump) cost the event loop more than the attach itself on a busy node
    if (previousIfIndex === undefined || !this.runs(cfg.ifIndex, program)) await attachShared(program, cfg, { bpfRoot: this.kernel.root, mode: this.opts.mode });
    return { ...program.ids };
  }

  /** Whether both hooks of ifIndex run exactly `program` (and nothing else). */
  private runs(ifIndex: number, program: SharedProgram): boolean {
    let now: ReturnType<typeof endpointPrograms>;
    try {
      now = endpointPrograms(ifIndex);
    } catch (err) {
      if ((err as { code?: string }).code === 'ENODEV') return false;
      throw err;
    }
    return (Object.keys(LXC_PROGRAMS) as LxcProgram[]).every((p) => {
      const ids = now[p].legacy !== undefined ? [...now[p].tcx, now[p].legacy] : now[p].tcx;
      return ids.length === 1 && ids[0] === program.ids[p];
    });
  }

  /** Whether the endpoint runs the shared program of this configuration with exactly cfg's entry and its shared policy map in its slot. */
  async isLoaded(cfg: EndpointDatapathConfig): Promise<boolean> {
    const program = await this.program();
    if (!this.runs(cfg.ifIndex, program)) return false;
    const entry = this.kernel.endpoints.get(cfg.ifIndex);
    if (!entry || JSON.stringify(entry) !== JSON.stringify(endpointInfo(cfg))) return false;
    return this.groups.slotMismatch(cfg.id) === undefined;
  }

  /** Removes the cellium_endpoints entry of ifIndex when it is endpoint `id`'s (an interface the endpoint had before). */
  private forgetInterface(id: number, ifIndex: number): void {
    if (this.kernel.endpoints.get(ifIndex)?.endpointId === id) this.kernel.endpoints.delete(ifIndex);
  }

  /** Releases the fds of the program (it stays pinned and attached). */
  close(): void {
    this.current?.program.close();
    this.current = undefined;
  }
}
