/**
 * BpfLoader: the Loader of the BPF datapath. rewrite+load loads bpf_lxc (the object's ELF is read
 * once per process and never recompiled; each load only sets the endpoint's .rodata constants; the
 * verifier runs off the JS thread) and attaches it to the endpoint's host interface, replacing the
 * old program atomically. The program is bound to the very maps the reconcilers write: the
 * endpoint's policy map and the shared maps, with the sizes of the configuration.
 */
import { readFileSync } from 'node:fs';
import { isEndpointLoaded, loadEndpointProgram, unloadEndpointProgram, type AttachMode, type BpfMap } from '../../bpf/index.js';
import { DEFAULT_CT_TIMEOUTS, type CtTimeouts } from '../datapath/conntrack.js';
import { IPCACHE_MAP, LXC_MAP } from '../datapath/map-names.js';
import type { EndpointDatapathConfig, Loader } from '../datapath/types.js';
import { wrapBpf } from './errors.js';
import type { KernelMaps } from './kernel-maps.js';

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

/** Loads, checks and unloads endpoint programs. */
export class BpfLoader implements Loader {
  /** How many programs were loaded (for status and tests). */
  loads = 0;

  constructor(
    private readonly kernel: KernelMaps,
    private readonly opts: { readonly object?: string; readonly mode?: AttachMode; readonly ctTimeouts?: CtTimeouts } = {},
  ) {}

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
    try {
      await this.gate(cfg);
      signal?.throwIfAborted();
      await loadEndpointProgram(cfg, {
        bpfRoot: this.kernel.root, object: this.opts.object, mode: this.opts.mode, ctTimeouts: this.timeouts,
        reuseMaps: { ...Object.fromEntries(Object.entries(this.boundMaps(cfg.id)).map(([n, m]) => [n, m.fd])), ...this.kernel.ct.fds() },
      });
      this.loads++;
    } catch (err) {
      throw wrapBpf('program', what, err);
    }
  }

  /** See Loader: detaches the programs (the interface may be gone already) and unpins the policy map. */
  async unloadEndpoint(id: number, ifName: string): Promise<void> {
    try {
      unloadEndpointProgram(id, ifIndexOf(ifName), { bpfRoot: this.kernel.root, removePolicyMap: false });
      this.kernel.removePolicy(id);
    } catch (err) {
      throw wrapBpf('program', `unloading the program of endpoint ${id} (${ifName})`, err);
    }
  }

  /** The conntrack lifetimes programs are loaded with. */
  get timeouts(): CtTimeouts {
    return this.opts.ctTimeouts ?? DEFAULT_CT_TIMEOUTS;
  }

  /**
   * See Loader: attached once at both hooks, with these constants (conntrack lifetimes included),
   * and looking up the very policy map, ipcache and conntrack maps this agent writes (cellium_lxc
   * is bound too, but the program does not read it, so the kernel does not list it among the
   * program's maps). A program bound to conntrack maps that were recreated is not loaded.
   */
  async isLoaded(cfg: EndpointDatapathConfig): Promise<boolean> {
    try {
      const maps = this.boundMaps(cfg.id);
      return isEndpointLoaded(cfg, undefined, [maps[OBJECT_POLICY_MAP]!.info.id, maps[IPCACHE_MAP]!.info.id, ...this.kernel.ct.ids()], this.timeouts);
    } catch (err) {
      throw wrapBpf('program', `checking the program of endpoint ${cfg.id} on ${cfg.ifName}`, err);
    }
  }

  /** The maps bpf_lxc reuses instead of its own definitions, by the object's map names. */
  private boundMaps(id: number): Record<string, BpfMap> {
    return { [OBJECT_POLICY_MAP]: this.kernel.policy(id).map, [LXC_MAP]: this.kernel.lxc.map, [IPCACHE_MAP]: this.kernel.ipcache.map };
  }
}
