/**
 * BpfLoader: the Loader of the BPF datapath. rewrite+load loads bpf_lxc (the object's ELF is read
 * once per process and never recompiled; each load only sets the endpoint's .rodata constants; the
 * verifier runs off the JS thread) and attaches it to the endpoint's host interface, replacing the
 * old program atomically. The program is bound to the very maps the reconcilers write: the
 * endpoint's policy map and the shared maps, with the sizes of the configuration. With
 * `program: 'shared'` (--bpf-lxc-program) endpoints attach the node's one shared bpf_lxc instead
 * (SharedLxc): a load is map writes and, the first time, two attaches.
 */
import { readFileSync } from 'node:fs';
import { programAttached, type AttachMode, type BpfMap, type TcHook } from '../../bpf/index.js';
import { LXC_PROGRAMS, endpointPrograms, isEndpointLoaded, isEndpointProgram, loadEndpointProgram, programMapIds, unloadEndpointProgram } from './lxc/index.js';
import { policyMapName } from '../../datapath/map-names.js';
import { DEFAULT_CT_TIMEOUTS, type CtTimeouts } from '../../datapath/conntrack.js';
import { IPCACHE_MAP, LXC_MAP } from '../../datapath/map-names.js';
import type { EndpointDatapathConfig, Loader } from '../../datapath/types.js';
import { wrapBpf } from './errors.js';
import type { KernelMaps } from './kernel-maps.js';
import { SharedLxc, isSharedProgram, openPinnedLBMaps } from './shared-loader.js';
import type { PolicyGroups } from './policy-groups.js';

/** The object's name of the per-endpoint policy map (bound to cellium_policy_<id>). */
const OBJECT_POLICY_MAP = 'cellium_policy';

/** The ifindex of a host interface, or 0 when it does not exist (any more). */
export function ifIndexOf(ifName: string): number {
  if (!/^[^/\0]{1,15}$/.test(ifName) || ifName === '.' || ifName === '..') return 0;
  try {
    return Number(readFileSync(`/sys/class/net/${ifName}/ifindex`, 'utf8').trim()) || 0;
  } catch {
    return 0;
  }
}

type LxcProgram = keyof typeof LXC_PROGRAMS;

/** What this loader attached (or found attached at restore) for an endpoint: the program ids at each hook. */
interface Attached {
  readonly ifName: string;
  readonly ifIndex: number;
  readonly progs: Readonly<Record<LxcProgram, number>>;
}

/** Every program id at one hook: tcx ones, then the legacy filter's. */
function hookIds(p: { tcx: number[]; legacy?: number }): number[] {
  return p.legacy !== undefined ? [...p.tcx, p.legacy] : p.tcx;
}

/** The one program id at each hook of ifIndex, or undefined when a hook has none or several. */
function singlePrograms(ifIndex: number): Record<LxcProgram, number> | undefined {
  const now = endpointPrograms(ifIndex);
  const out: Partial<Record<LxcProgram, number>> = {};
  for (const prog of Object.keys(LXC_PROGRAMS) as LxcProgram[]) {
    const ids = hookIds(now[prog]);
    if (ids.length !== 1) return undefined;
    out[prog] = ids[0]!;
  }
  return out as Record<LxcProgram, number>;
}

/** Loads, checks and unloads endpoint programs. */
export class BpfLoader implements Loader {
  /** How many programs were loaded (for status and tests). */
  loads = 0;
  /** Per endpoint, the programs this loader attached or verified: what checkAttached compares the kernel with. */
  private readonly attached = new Map<number, Attached>();
  /** Endpoints with a load or unload in progress (their programs are changing: checkAttached skips them). */
  private readonly busy = new Map<number, number>();

  /** The shared program, with `program: 'shared'`. */
  readonly shared?: SharedLxc;

  constructor(
    private readonly kernel: KernelMaps,
    private readonly opts: {
      readonly object?: string; readonly mode?: AttachMode; readonly ctTimeouts?: CtTimeouts; readonly program?: 'per-endpoint' | 'shared';
      /** The shared policy maps (required with program 'shared'). */
      readonly policyGroups?: PolicyGroups;
    } = {},
  ) {
    if (opts.program === 'shared') {
      if (!opts.policyGroups) throw new Error('the shared bpf_lxc needs the shared policy maps (BpfMaps with sharedPolicyMaps)');
      this.shared = new SharedLxc(kernel, opts, opts.policyGroups);
    }
  }

  /** Resolves once nothing stands in the way of loading `cfg` (see setGate). */
  private gate: (cfg: EndpointDatapathConfig) => Promise<void> = async () => undefined;

  /**
   * Sets what a load waits for first: the conntrack scrub of an address a deleted endpoint held,
   * so a new endpoint with that address never inherits its connections.
   */
  setGate(gate: (cfg: EndpointDatapathConfig) => Promise<void>): void {
    this.gate = gate;
  }

  /** See Loader. */
  async reloadEndpoint(cfg: EndpointDatapathConfig, signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    const what = `loading bpf_lxc for endpoint ${cfg.id} on ${cfg.ifName} (ifindex ${cfg.ifIndex})`;
    this.enter(cfg.id);
    try {
      await this.gate(cfg);
      signal?.throwIfAborted();
      if (this.shared) {
        const progs = await this.shared.load(cfg, this.attached.get(cfg.id)?.ifIndex);
        this.attached.set(cfg.id, { ifName: cfg.ifName, ifIndex: cfg.ifIndex, progs });
        this.loads++;
        return;
      }
      const lb = openPinnedLBMaps(this.kernel.root);
      let r: Awaited<ReturnType<typeof loadEndpointProgram>>;
      try {
        r = await loadEndpointProgram(cfg, {
          bpfRoot: this.kernel.root, object: this.opts.object, mode: this.opts.mode, ctTimeouts: this.timeouts,
          reuseMaps: {
            ...Object.fromEntries(Object.entries(this.boundMaps(cfg.id)).map(([n, m]) => [n, m.fd])), ...this.kernel.ct.fds(), ...this.kernel.sharedFds(),
            ...Object.fromEntries(lb.map((m) => [m.name, m.map.fd])),
          },
        });
      } finally {
        for (const m of lb) m.map.close();
      }
      this.attached.set(cfg.id, { ifName: cfg.ifName, ifIndex: cfg.ifIndex, progs: { from_container: r.attachments.from_container.progId, to_container: r.attachments.to_container.progId } });
      this.loads++;
    } catch (err) {
      this.attached.delete(cfg.id);
      throw wrapBpf('program', what, err);
    } finally {
      this.leave(cfg.id);
    }
  }

  /**
   * See Loader: detaches the endpoint's programs (the interface may be gone already) and unpins its
   * policy map. Only this endpoint's own programs: a legacy filter on the interface that is not
   * this agent's bpf_lxc of this endpoint stays.
   */
  async unloadEndpoint(id: number, ifName: string): Promise<void> {
    const known = this.attached.get(id)?.ifIndex;
    this.attached.delete(id);
    this.enter(id);
    try {
      const ifIndex = ifIndexOf(ifName);
      unloadEndpointProgram(id, ifIndex, { bpfRoot: this.kernel.root, removePolicyMap: false, owns: (prog) => this.owns(prog, id, ifIndex) });
      // the shared program's entry and slot go after the detach (an attached interface never lacks its entry)
      await this.forgetShared(id, known ?? (ifIndex || undefined));
      this.kernel.removePolicy(id);
    } catch (err) {
      throw wrapBpf('program', `unloading the program of endpoint ${id} (${ifName})`, err);
    } finally {
      this.leave(id);
    }
  }

  /**
   * Removes an endpoint's cellium_endpoints entry and cellium_policy_maps slot (whatever the mode:
   * an agent switched back to per-endpoint programs leaves none behind). Resolves once the slot
   * reads back empty (the kernel's grace period after it finishes on a worker).
   */
  async forgetShared(id: number, ifIndex?: number): Promise<void> {
    const slots = this.kernel.policySlots;
    const eps = this.kernel.endpoints;
    if (ifIndex !== undefined && eps.get(ifIndex)?.endpointId === id) eps.delete(ifIndex);
    else for (const [ifx, v] of eps.entries()) if (v.endpointId === id) eps.delete(ifx);
    // shared policy maps: the endpoint leaves its map's group too (the map goes with its last endpoint)
    if (this.shared) await this.shared.groups.leave(id);
    else await slots.empty(id);
  }

  /** The conntrack lifetimes programs are loaded with. */
  get timeouts(): CtTimeouts {
    return this.opts.ctTimeouts ?? DEFAULT_CT_TIMEOUTS;
  }

  /**
   * Whether the loaded program `progId` is this agent's bpf_lxc of endpoint `id`: its per-endpoint
   * program (its constants, this agent's ipcache), or this agent's shared program on an interface
   * (`ifIndex`) whose cellium_endpoints entry is the endpoint's or missing.
   */
  owns(progId: number, id: number, ifIndex?: number): boolean {
    const ids = this.shared?.ids;
    const ipcache = [this.kernel.ipcache.map.info.id];
    if ((ids && (ids.from_container === progId || ids.to_container === progId)) || isSharedProgram(progId, ipcache)) {
      // the shared program serves whichever endpoint the interface's cellium_endpoints entry names (none: nobody else)
      const entry = ifIndex === undefined ? undefined : this.kernel.endpoints.get(ifIndex);
      return entry === undefined || entry.endpointId === id;
    }
    return isEndpointProgram(progId, id, ipcache);
  }

  /**
   * See Loader: compares the kernel with what this loader attached. Endpoints never loaded or
   * verified here, and those with a load in progress, answer undefined.
   */
  async checkAttached(id: number): Promise<string | undefined> {
    const a = this.attached.get(id);
    if (!a || this.busy.has(id)) return undefined;
    for (const [prog, hook] of Object.entries(LXC_PROGRAMS) as [LxcProgram, TcHook][]) {
      // where the configured mode attaches first: the other mechanism only when that one does not have it
      let found: true | number[];
      try {
        found = programAttached({ ifindex: a.ifIndex, hook, mode: this.opts.mode }, a.progs[prog]);
      } catch (err) {
        if ((err as { code?: string }).code === 'ENODEV') return `its interface ${a.ifName} (ifindex ${a.ifIndex}) is gone`;
        throw wrapBpf('program', `checking the programs of endpoint ${id} on ${a.ifName}`, err);
      }
      if (found !== true) {
        return `its program ${prog} (id ${a.progs[prog]}) is no longer attached at tc ${hook} of ${a.ifName}${found.length ? ` (found ${found.join(', ')})` : ' (nothing is)'}`;
      }
    }
    return this.policyMapMismatch(id, a.progs);
  }

  /**
   * Why the attached programs do not look up the endpoint's pinned policy map (it was unpinned or
   * replaced by hand: the agent writes the pinned one, the programs would enforce a stale copy), or
   * undefined.
   */
  private policyMapMismatch(id: number, progs: Record<LxcProgram, number>): string | undefined {
    if (this.shared) {
      const why = this.busy.has(id) ? undefined : this.shared.groups.slotMismatch(id);
      return why && `the shared program does not look up the policy map of ${policyMapName(id)}: ${why}`;
    }
    const pinned = this.busy.has(id) ? undefined : this.kernel.existingPolicy(id)?.map.info.id;
    for (const prog of Object.keys(LXC_PROGRAMS) as LxcProgram[]) {
      let bound: number[];
      try {
        bound = programMapIds(progs[prog]);
      } catch {
        continue; // the program went meanwhile: the next check sees it detached
      }
      if (pinned === undefined || !bound.includes(pinned)) {
        return `its program ${prog} (id ${progs[prog]}) does not look up the pinned policy map ${policyMapName(id)} (${pinned === undefined ? 'none is pinned' : `the pinned one is map id ${pinned}`}): it was removed or replaced by hand`;
      }
    }
    return undefined;
  }

  /** Endpoints whose programs this loader attached and the kernel no longer has, with why (the periodic prune). */
  async lostPrograms(): Promise<{ id: number; why: string }[]> {
    const out: { id: number; why: string }[] = [];
    for (const id of [...this.attached.keys()]) {
      const why = await this.checkAttached(id);
      if (why) out.push({ id, why });
    }
    return out;
  }

  private enter(id: number): void {
    this.busy.set(id, (this.busy.get(id) ?? 0) + 1);
  }

  private leave(id: number): void {
    const n = (this.busy.get(id) ?? 1) - 1;
    if (n > 0) this.busy.set(id, n);
    else this.busy.delete(id);
  }

  /**
   * See Loader: attached once at both hooks, with these constants (conntrack lifetimes included),
   * and looking up the very policy map, ipcache and conntrack maps this agent writes (cellium_lxc
   * is bound too, but the program does not read it, so the kernel does not list it among the
   * program's maps). A program bound to conntrack maps that were recreated is not loaded.
   */
  async isLoaded(cfg: EndpointDatapathConfig): Promise<boolean> {
    try {
      if (this.shared) {
        if (!(await this.shared.isLoaded(cfg))) return false;
        const ids = this.shared.ids;
        if (ids && !this.busy.has(cfg.id)) this.attached.set(cfg.id, { ifName: cfg.ifName, ifIndex: cfg.ifIndex, progs: { ...ids } });
        return true;
      }
      const maps = this.boundMaps(cfg.id);
      if (!isEndpointLoaded(cfg, undefined, [maps[OBJECT_POLICY_MAP]!.info.id, maps[IPCACHE_MAP]!.info.id, ...this.kernel.ct.ids(), ...this.kernel.sharedIds()], this.timeouts, this.opts.object)) return false;
      // what restore found in place is what checkAttached watches from now on
      const progs = singlePrograms(cfg.ifIndex);
      if (progs && !this.busy.has(cfg.id)) this.attached.set(cfg.id, { ifName: cfg.ifName, ifIndex: cfg.ifIndex, progs });
      return true;
    } catch (err) {
      throw wrapBpf('program', `checking the program of endpoint ${cfg.id} on ${cfg.ifName}`, err);
    }
  }

  /** The maps bpf_lxc reuses instead of its own definitions, by the object's map names. */
  private boundMaps(id: number): Record<string, BpfMap> {
    return { [OBJECT_POLICY_MAP]: this.kernel.policy(id).map, [LXC_MAP]: this.kernel.lxc.map, [IPCACHE_MAP]: this.kernel.ipcache.map };
  }
}
