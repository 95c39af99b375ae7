/**
 * bpf_lxc on the host-side veths of the packet-path benches' pods (datapath-traffic, lb-traffic),
 * either way the agent can run it (--bpf-lxc-program): the node's one shared program (endpoint
 * constants read per packet from cellium_endpoints, policy maps from cellium_policy_maps) or a
 * copy per endpoint with its constants folded in; each pod's policy map synced, the shared
 * conntrack maps and ipcache bound. Plus the one line that says why such a bench cannot run here,
 * and iperf3's result read.
 */
import { execFileSync } from 'node:child_process';
import { bpfAvailable } from '../../src/bpf/index.js';
import { openPolicyMap, syncPolicyMap, type CtMaps, type IPCacheMap } from '../../src/maps/index.js';
import { openEndpointsMap, PolicyMapsMap } from '../../src/maps/endpoints/index.js';
import { ENDPOINTS_MAP, POLICY_MAPS_MAP } from '../../src/datapath/map-names.js';
import {
  attachShared, loadEndpointProgram, loadSharedProgram, unloadEndpointProgram, unloadSharedEndpoint, writeSharedEndpoint,
} from '../../src/cells/datapath-bpf/lxc/index.js';
import type { EndpointDatapathConfig, PolicyEntry } from '../../src/datapath/types.js';
import { ip, type BenchPod } from './pods.js';

/** How the pods get bpf_lxc: the node's one shared copy, or one copy per endpoint (the previous releases' way). */
export type LxcVariant = 'shared' | 'per-endpoint';

/** The variants in the order a bench runs them, with the name its tables give each. */
export const LXC_VARIANTS: ReadonlyArray<{ variant: LxcVariant; label: string }> = [
  { variant: 'shared', label: 'shared bpf_lxc (default)' },
  { variant: 'per-endpoint', label: 'per-endpoint bpf_lxc (previous)' },
];

/** Why a packet-path bench cannot run here (root, BPF, each of `tools` on PATH), or undefined. */
export function packetBenchMissing(tools: readonly string[]): string | undefined {
  if (process.getuid?.() !== 0) return 'needs root (network namespaces, BPF)';
  const a = bpfAvailable();
  if (!a.ok) return `BPF unavailable: ${a.reason}`;
  for (const tool of tools) {
    try {
      execFileSync('which', [tool]);
    } catch {
      return `${tool} missing (npm run setup installs it: scripts/packages.d/40-bench.txt)`;
    }
  }
  return undefined;
}

/** Where the programs go: the node namespace, the BPF root, and the maps every endpoint shares. */
export interface PodPrograms {
  readonly node: string;
  readonly root: string;
  readonly ct: CtMaps;
  readonly ipcache: IPCacheMap;
  /** Which bpf_lxc (default: shared, as the agent runs it). */
  readonly variant?: LxcVariant;
  /** Another build of bpf_lxc.o to load instead of the built one (a before/after comparison). */
  readonly object?: string;
}

/**
 * The environment variable naming another build of bpf_lxc.o (e.g. the main branch's) that the
 * packet-path benches also run, as the shared program, beside the current one: a before/after
 * figure from the same run, under the same load.
 */
export const BASELINE_OBJECT_ENV = 'CELLIUM_BENCH_LXC_BASELINE';

/** The baseline object the environment names (see BASELINE_OBJECT_ENV), or undefined. */
export function baselineObject(): string | undefined {
  return process.env[BASELINE_OBJECT_ENV] || undefined;
}

/**
 * Loads bpf_lxc on each pod's host-side veth (endpoint IDs 1, 2, … and identities 1001, 1002, … in
 * order) with its policy, as `o.variant` says; returns what unloads them and closes their maps.
 */
export async function loadPodPrograms(o: PodPrograms, pods: ReadonlyArray<{ pod: BenchPod; policy: readonly PolicyEntry[] }>): Promise<() => void> {
  const netns = `/var/run/netns/${o.node}`;
  const undo: Array<() => void> = [];
  const unload = (): void => {
    for (const u of undo.reverse()) u();
  };
  try {
    const endpoints: Array<{ cfg: EndpointDatapathConfig; policyFd: number }> = [];
    for (const [i, { pod, policy: entries }] of pods.entries()) {
      const policy = openPolicyMap(o.root, i + 1);
      undo.push(() => policy.close());
      syncPolicyMap(policy, entries);
      const ifIndex = (JSON.parse(ip('-n', o.node, '-j', 'link', 'show', pod.lxc)) as { ifindex: number }[])[0]!.ifindex;
      endpoints.push({ cfg: { id: i + 1, identity: 1001 + i, ipv4: pod.addr, ifName: pod.lxc, ifIndex, mac: '', hostMac: '' }, policyFd: policy.map.fd });
    }
    const shared = { ...o.ct.fds(), cellium_ipcache: o.ipcache.map.fd };
    if ((o.variant ?? 'shared') === 'per-endpoint') {
      for (const { cfg, policyFd } of endpoints) {
        undo.push(() => unloadEndpointProgram(cfg.id, cfg.ifIndex, { bpfRoot: o.root, netns }));
        await loadEndpointProgram(cfg, { bpfRoot: o.root, netns, mode: 'legacy', object: o.object, reuseMaps: { ...shared, cellium_policy: policyFd } });
      }
      return unload;
    }
    const maps = { endpoints: openEndpointsMap(o.root), policyMaps: PolicyMapsMap.open(o.root) };
    undo.push(() => {
      maps.endpoints.close();
      maps.policyMaps.close();
    });
    const program = await loadSharedProgram({ bpfRoot: o.root, object: o.object, reuseMaps: { ...shared, [ENDPOINTS_MAP]: maps.endpoints.map.fd, [POLICY_MAPS_MAP]: maps.policyMaps.map.fd } });
    undo.push(() => program.close());
    for (const { cfg, policyFd } of endpoints) {
      undo.push(() => unloadSharedEndpoint(cfg.id, cfg.ifIndex, { bpfRoot: o.root, netns }));
      writeSharedEndpoint(maps, cfg, policyFd);
      await attachShared(program, cfg, { bpfRoot: o.root, netns, mode: 'legacy' });
    }
    return unload;
  } catch (err) {
    unload();
    throw err;
  }
}

/** The throughput an `iperf3 -c … -J` run received, Gbit/s; throws with iperf3's error when it has none. */
export function iperfGbps(json: string): number {
  const r = JSON.parse(json) as { error?: string; end?: { sum_received?: { bits_per_second: number } } };
  if (!r.end?.sum_received) throw new Error(`iperf3: ${r.error ?? 'no result'}`);
  return r.end.sum_received.bits_per_second / 1e9;
}
