/**
 * bpf_lxc on the host-side veths of the packet-path benches' pods (datapath-traffic, lb-traffic):
 * each pod's policy map synced and its program loaded with the shared conntrack maps and ipcache;
 * plus the one line that says why such a bench cannot run here, and iperf3's result read.
 */
import { execFileSync } from 'node:child_process';
import { bpfAvailable } from '../../src/bpf/index.js';
import { openPolicyMap, syncPolicyMap, type CtMaps, type IPCacheMap } from '../../src/maps/index.js';
import { loadEndpointProgram, unloadEndpointProgram } from '../../src/cells/datapath-bpf/lxc/index.js';
import type { PolicyEntry } from '../../src/datapath/types.js';
import { ip, type BenchPod } from './pods.js';

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
}

/**
 * Loads bpf_lxc on each pod's host-side veth (endpoint IDs 1, 2, … and identities 1001, 1002, … in
 * order) with its policy; returns what unloads them and closes their policy maps.
 */
export async function loadPodPrograms(o: PodPrograms, pods: ReadonlyArray<{ pod: BenchPod; policy: readonly PolicyEntry[] }>): Promise<() => void> {
  const undo: Array<() => void> = [];
  for (const [i, { pod, policy: entries }] of pods.entries()) {
    const policy = openPolicyMap(o.root, i + 1);
    syncPolicyMap(policy, entries);
    const ifIndex = (JSON.parse(ip('-n', o.node, '-j', 'link', 'show', pod.lxc)) as { ifindex: number }[])[0]!.ifindex;
    await loadEndpointProgram(
      { id: i + 1, identity: 1001 + i, ipv4: pod.addr, ifName: pod.lxc, ifIndex, mac: '', hostMac: '' },
      { bpfRoot: o.root, netns: `/var/run/netns/${o.node}`, mode: 'legacy', reuseMaps: { ...o.ct.fds(), cellium_ipcache: o.ipcache.map.fd, cellium_policy: policy.map.fd } },
    );
    undo.push(() => {
      unloadEndpointProgram(i + 1, ifIndex, { bpfRoot: o.root, netns: `/var/run/netns/${o.node}` });
      policy.close();
    });
  }
  return () => {
    for (const u of undo) u();
  };
}

/** The throughput an `iperf3 -c … -J` run received, Gbit/s; throws with iperf3's error when it has none. */
export function iperfGbps(json: string): number {
  const r = JSON.parse(json) as { error?: string; end?: { sum_received?: { bits_per_second: number } } };
  if (!r.end?.sum_received) throw new Error(`iperf3: ${r.error ?? 'no result'}`);
  return r.end.sum_received.bits_per_second / 1e9;
}
