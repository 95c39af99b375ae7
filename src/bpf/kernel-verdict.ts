/**
 * The verdict of a packet computed from the kernel maps (BPF mode of Datapath.verdict): reads
 * cellium_ipcache and the endpoint's policy map and runs the shared model on their contents,
 * which is what bpf_lxc decides for that packet.
 */
import { existsSync } from 'node:fs';
import { PolicyLpm } from '../cells/datapath/policy-lpm.js';
import type { Direction, Verdict } from '../cells/datapath/types.js';
import { IPCacheLpm, modelVerdict, type VerdictPacket } from '../cells/datapath/verdict-model.js';
import { openIPCacheMap, openPolicyMap, policyMapPath } from './cellium-maps.js';

/** The kernel maps' verdict for `packet` of endpoint `endpointId` (no policy map pinned: empty policy). */
export function kernelVerdict(bpfRoot: string, endpointId: number, direction: Direction, packet: VerdictPacket): Verdict {
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
  return modelVerdict(cache, policy, direction, packet);
}
