/**
 * The verdict of a packet computed from the kernel maps (BPF mode of Datapath.verdict): reads
 * cellium_ipcache, the endpoint's policy map and the conntrack entries the packet would match, and
 * runs the shared model on them, which is what bpf_lxc decides for that packet (a reply of a
 * tracked connection passes). Nothing is written: the packet only asks.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Conntrack } from '../../../datapath/model/conntrack.js';
import type { CtTimeouts } from '../../../datapath/conntrack.js';
import { PolicyLpm } from '../../../datapath/model/policy-lpm.js';
import type { Direction, Verdict } from '../../../datapath/types.js';
import { IPCacheLpm, decidePacket, peerAddress, type VerdictPacket } from '../../../datapath/model/verdict.js';
import { openIPCacheMap } from '../../../maps/ipcache/map.js';
import { openPolicyMap, policyMapPath } from '../../../maps/policy/map.js';
import { CT_MAPS, monotonicSeconds } from '../../../maps/ct/layout.js';
import { CtMaps } from '../../../maps/ct/maps.js';

/** The kernel maps' verdict for `packet` of endpoint `endpointId` (no policy map pinned: empty policy; no conntrack maps: nothing tracked). */
export function kernelVerdict(bpfRoot: string, endpointId: number, direction: Direction, packet: VerdictPacket, timeouts?: CtTimeouts): Verdict {
  const ipc = openIPCacheMap(bpfRoot);
  let cache: IPCacheLpm;
  try {
    cache = new IPCacheLpm(ipc.entries().map(([cidr, v]) => ({ cidr, identity: v.identity })));
  } finally {
    ipc.close();
  }
  const policy = new PolicyLpm();
  if (existsSync(policyMapPath(bpfRoot, endpointId))) {
    const pm = openPolicyMap(bpfRoot, endpointId);
    try {
      for (const [key, deny] of pm.entries()) policy.set({ key, deny });
    } finally {
      pm.close();
    }
  }
  const ct = CT_MAPS.every((m) => existsSync(join(bpfRoot, m.name))) ? CtMaps.openPinned(bpfRoot) : undefined;
  try {
    const tracker = ct && new Conntrack(ct.store(), timeouts, monotonicSeconds);
    return decidePacket(tracker, policy, direction, cache.resolve(peerAddress(direction, packet)), packet, 0, false).verdict;
  } finally {
    ct?.close();
  }
}
