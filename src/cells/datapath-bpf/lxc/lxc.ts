/**
 * The per-endpoint program bpf_lxc: its .rodata constants from an EndpointDatapathConfig, and
 * load + attach (or atomic replace) of both programs on the endpoint's host-side veth:
 * from_container at tc ingress, to_container at tc egress. Shared maps come from the BPF root;
 * the object's cellium_policy is bound to the endpoint's pinned cellium_policy_<id>.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parseAddr } from '../../../lib/addr.js';
import { DEFAULT_CT_TIMEOUTS, DEFAULT_MONITOR_AGGREGATION_S, type CtTimeouts } from '../../../datapath/conntrack.js';
import type { EndpointDatapathConfig } from '../../../datapath/types.js';
import { attachTc, attachedPrograms, detachTc, type AttachMode, type TcAttachment, type TcHook } from '../../../bpf/attach.js';
import { policyMapPath, removePolicyMap } from '../../../maps/policy/map.js';
import { hostOrder } from '../../../bpf/host-order.js';
import { macBytes, writeAddr } from '../../../maps/addr-codec.js';
import { OBJECT_POLICY_MAP } from '../../../maps/policy/layout.js';
import { objectPath } from '../../../bpf/native.js';
import { BpfObject } from '../../../bpf/object.js';

/** The two programs of bpf_lxc and the tc hook of the host-side veth each goes to. */
export const LXC_PROGRAMS: Readonly<Record<'from_container' | 'to_container', TcHook>> = {
  from_container: 'ingress',
  to_container: 'egress',
};

/** bpf_lxc's `endpoint_id` constant for an endpoint ID (what tells whose program an attached one is). */
export function endpointIdConstant(id: number): Buffer {
  const u16 = Buffer.alloc(2);
  hostOrder.u16.write(u16, id, 0);
  return u16;
}

/** A u32 constant's bytes (host order). */
function u32(v: number): Buffer {
  const b = Buffer.alloc(4);
  hostOrder.u32.write(b, v, 0);
  return b;
}

/** The node-wide conntrack constants of bpf_lxc (lifetimes, monitor report interval), by variable name. */
export function ctConstants(timeouts: CtTimeouts = DEFAULT_CT_TIMEOUTS): Record<string, Buffer> {
  return {
    ct_lifetime_tcp: u32(timeouts.tcp),
    ct_lifetime_any: u32(timeouts.any),
    ct_lifetime_syn: u32(timeouts.syn),
    ct_lifetime_close: u32(timeouts.close),
    ct_report_interval: u32(timeouts.report ?? DEFAULT_MONITOR_AGGREGATION_S),
  };
}

const builds = new Map<string, { readonly stamp: string; readonly id: Buffer }>();

/**
 * The `lxc_build` constant of an object: the first 8 bytes of its SHA-256 (computed once per file
 * version, by path, size and mtime). A loaded program whose constant differs is of another build
 * (the agent was upgraded with its pins in place) and is replaced, never kept.
 */
export function lxcBuildId(object: string | Buffer = objectPath('bpf_lxc')): Buffer {
  if (typeof object !== 'string') return createHash('sha256').update(object).digest().subarray(0, 8);
  const st = statSync(object);
  const stamp = `${st.size}:${st.mtimeMs}:${st.ino}`;
  const known = builds.get(object);
  if (known?.stamp === stamp) return known.id;
  const id = createHash('sha256').update(readFileSync(object)).digest().subarray(0, 8);
  builds.set(object, { stamp, id });
  return id;
}

/**
 * The .rodata constants of bpf_lxc for an endpoint, by variable name: its identity, addresses and
 * MACs, the conntrack lifetimes, and whether conntrack and its accounting are on (the endpoint's
 * Conntrack and ConntrackAccounting options, on unless Disabled).
 */
export function lxcConstants(cfg: EndpointDatapathConfig, timeouts: CtTimeouts = DEFAULT_CT_TIMEOUTS, object?: string | Buffer): Record<string, Buffer> {
  const u16 = endpointIdConstant(cfg.id);
  const ip = (s: string | undefined, family: 'ipv4' | 'ipv6'): Buffer => {
    const out = Buffer.alloc(family === 'ipv4' ? 4 : 16);
    const a = s ? parseAddr(s) : undefined;
    if (s && a?.family !== family) throw new Error(`endpoint ${cfg.id}: "${s}" is not an ${family} address`);
    if (a) {
      const full = Buffer.alloc(16);
      writeAddr(family, a.value, full, 0);
      full.copy(out, 0, 0, out.length);
    }
    return out;
  };
  return {
    endpoint_id: u16,
    endpoint_identity: u32(cfg.identity),
    endpoint_ipv4: ip(cfg.ipv4, 'ipv4'),
    endpoint_ipv6: ip(cfg.ipv6, 'ipv6'),
    endpoint_ifindex: u32(cfg.ifIndex),
    endpoint_mac: macBytes(cfg.mac),
    host_mac: macBytes(cfg.hostMac),
    ...ctConstants(timeouts),
    ct_enabled: Buffer.from([cfg.options?.Conntrack === 'Disabled' ? 0 : 1]),
    ct_accounting: Buffer.from([cfg.options?.ConntrackAccounting === 'Disabled' ? 0 : 1]),
    lxc_build: lxcBuildId(object),
  };
}

/** bpffs path of the tcx link pin of an endpoint's program. */
export function lxcLinkPath(bpfRoot: string, endpointId: number, program: keyof typeof LXC_PROGRAMS): string {
  return join(bpfRoot, 'links', `lxc_${String(endpointId).padStart(5, '0')}_${program}`);
}

/** Options of {@link loadEndpointProgram}. */
export interface LxcLoadOptions {
  /** The BPF root on a bpffs (see ensureBpffs). */
  readonly bpfRoot: string;
  /** Object file (default: the built build/bpf/bpf_lxc.o) or its bytes. */
  readonly object?: string | Buffer;
  /** Network namespace of the interface (default: the agent's). */
  readonly netns?: string;
  readonly mode?: AttachMode;
  /**
   * Maps the object reuses instead of its own definitions, by the object's map name (e.g.
   * `cellium_lxc`, `cellium_policy`): fds the caller keeps owning. This is how maps sized by the
   * agent's configuration (rather than the ELF's max_entries) are bound to the program.
   */
  readonly reuseMaps?: Readonly<Record<string, number>>;
  /** Conntrack lifetimes (default: Cilium's). */
  readonly ctTimeouts?: CtTimeouts;
}

/** What a load did. */
export interface LxcLoadResult {
  readonly policyMapPath: string;
  readonly attachments: Readonly<Record<keyof typeof LXC_PROGRAMS, TcAttachment>>;
}

/**
 * Loads bpf_lxc with the endpoint's constants and attaches both programs to cfg.ifIndex,
 * replacing a previous load atomically. The policy map cellium_policy_<id> is reused when pinned,
 * otherwise created and pinned (empty: everything but the always-pass cases drops). The verifier
 * and JIT run on a libuv worker, both programs one after the other: on a small node, verifying
 * them at once on two threads only takes CPU from the event loop and the pod's setup.
 */
export async function loadEndpointProgram(cfg: EndpointDatapathConfig, o: LxcLoadOptions): Promise<LxcLoadResult> {
  const obj = openPrepared(cfg, o);
  try {
    await obj.loadAsync();
    const attached = await Promise.all(PROGRAM_NAMES.map((prog) => attachProgram(obj, prog, cfg, o)));
    const attachments = Object.fromEntries(PROGRAM_NAMES.map((prog, i) => [prog, attached[i]!])) as Record<LxcProgram, TcAttachment>;
    return { policyMapPath: policyMapPath(o.bpfRoot, cfg.id), attachments };
  } finally {
    obj.close();
  }
}

type LxcProgram = keyof typeof LXC_PROGRAMS;
const PROGRAM_NAMES = Object.keys(LXC_PROGRAMS) as LxcProgram[];

/**
 * bpf_lxc loaded with an endpoint's constants and maps but attached nowhere: for running it on
 * crafted packets (BpfObject.testRun). The caller closes it.
 */
export async function loadLxcObject(cfg: EndpointDatapathConfig, o: LxcLoadOptions): Promise<BpfObject> {
  const obj = openPrepared(cfg, o);
  try {
    await obj.loadAsync();
    return obj;
  } catch (err) {
    obj.close();
    throw err;
  }
}

/** bpf_lxc opened with the endpoint's constants, its policy map's pin and the maps to reuse set. */
function openPrepared(cfg: EndpointDatapathConfig, o: LxcLoadOptions): BpfObject {
  const source = o.object ?? objectPath('bpf_lxc');
  const obj = typeof source === 'string' ? BpfObject.openCached(source, { name: 'bpf_lxc', pinRoot: o.bpfRoot }) : BpfObject.open(source, { name: 'bpf_lxc', pinRoot: o.bpfRoot });
  try {
    obj.setConstants(lxcConstants(cfg, o.ctTimeouts, source));
    obj.setMapPinPath(OBJECT_POLICY_MAP, policyMapPath(o.bpfRoot, cfg.id));
    for (const [name, fd] of Object.entries(o.reuseMaps ?? {})) obj.reuseMap(name, fd);
    return obj;
  } catch (err) {
    obj.close();
    throw err;
  }
}

/** Attaches a loaded program of bpf_lxc at its hook of the endpoint's interface. */
function attachProgram(obj: BpfObject, prog: LxcProgram, cfg: EndpointDatapathConfig, o: LxcLoadOptions): Promise<TcAttachment> {
  mkdirSync(join(o.bpfRoot, 'links'), { recursive: true });
  return attachTc(obj.programFd(prog), {
    ifindex: cfg.ifIndex, hook: LXC_PROGRAMS[prog], netns: o.netns, mode: o.mode, pinPath: lxcLinkPath(o.bpfRoot, cfg.id, prog),
  });
}

/** Options of {@link unloadEndpointProgram}. */
export interface LxcUnloadOptions {
  readonly bpfRoot: string;
  readonly netns?: string;
  /** Also remove the endpoint's policy map pin (default true). */
  readonly removePolicyMap?: boolean;
  /**
   * Whether the legacy filter's program (by id) is this endpoint's: a filter that is not is left on
   * the interface (another endpoint's, or another tool's). Without it, whatever filter sits at
   * Cellium's handle and priority is removed.
   */
  readonly owns?: (progId: number) => boolean;
}

/** The legacy filter at a hook of ifIndex when `owns` accepts its program (or no `owns` was given); 0: leave the hook alone. */
function ownedLegacyFilter(ifIndex: number, hook: TcHook, o: LxcUnloadOptions): number {
  if (ifIndex <= 0 || !o.owns) return ifIndex;
  let legacy: number | undefined;
  try {
    legacy = attachedPrograms({ ifindex: ifIndex, hook, netns: o.netns }).legacy;
  } catch (err) {
    if ((err as { code?: string }).code === 'ENODEV') return 0; // the interface is gone, its filters with it
    throw err;
  }
  return legacy !== undefined && o.owns(legacy) ? ifIndex : 0;
}

/**
 * Detaches an endpoint's programs (its tcx links, and the legacy filter when `owns` says it is the
 * endpoint's) and removes its pins; missing things are fine.
 */
export function unloadEndpointProgram(endpointId: number, ifIndex: number, o: LxcUnloadOptions): boolean {
  let removed = false;
  for (const [prog, hook] of Object.entries(LXC_PROGRAMS) as [keyof typeof LXC_PROGRAMS, TcHook][]) {
    const pinPath = lxcLinkPath(o.bpfRoot, endpointId, prog);
    if (detachTc({ ifindex: ownedLegacyFilter(ifIndex, hook, o), hook, netns: o.netns, pinPath })) removed = true;
  }
  if (o.removePolicyMap ?? true) removed = removePolicyMap(o.bpfRoot, endpointId) || removed;
  return removed;
}

/** Program ids attached to an endpoint's interface per program hook (tcx and legacy). */
export function endpointPrograms(ifIndex: number, netns?: string): Record<keyof typeof LXC_PROGRAMS, { tcx: number[]; legacy?: number }> {
  return {
    from_container: attachedPrograms({ ifindex: ifIndex, hook: 'ingress', netns }),
    to_container: attachedPrograms({ ifindex: ifIndex, hook: 'egress', netns }),
  };
}

/** Endpoint IDs that have link pins under the BPF root (for restore and garbage collection). */
export function pinnedEndpoints(bpfRoot: string): number[] {
  const dir = join(bpfRoot, 'links');
  if (!existsSync(dir)) return [];
  const ids = new Set<number>();
  for (const f of readdirSync(dir)) {
    const m = /^lxc_(\d{5})_/.exec(f);
    if (m) ids.add(Number(m[1]));
  }
  return [...ids].sort((a, b) => a - b);
}
