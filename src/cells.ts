/**
 * The agent's cells, grouped like Cilium's daemon/cmd/cells.go: infrastructure (what every other
 * cell runs on), the control plane (endpoints, identities, policy, IPAM, the API) and the datapath.
 */
import { invoke, type Cell } from './hive/index.js';
import { identityCell, IdentityAllocatorToken, type IdentityAllocator } from './cells/identity/index.js';
import { ipamCell, IPAMToken, type IPAM } from './cells/ipam/index.js';
import { statedirCell } from './cells/statedir/index.js';

/** Infrastructure: state directory, API server, metrics. */
export const infrastructure: readonly Cell[] = [statedirCell];

/** Control plane: endpoints, identities, policy, IPAM, API handlers. */
export const controlPlane: readonly Cell[] = [identityCell, ipamCell];

/** Datapath: the selected datapath (memory or BPF), loader and maps. */
export const datapath: readonly Cell[] = [];

/**
 * What the agent runs: invoking these constructs them (and everything they depend on), which
 * appends their start/stop hooks and jobs. Cells nobody invokes or depends on stay unconstructed.
 */
const agentInvokes: readonly Cell[] = [
  invoke('control-plane', (_identities: IdentityAllocator, _ipam: IPAM) => undefined, IdentityAllocatorToken, IPAMToken),
];

/** Every cell of the agent. */
export const agentCells: readonly Cell[] = [...infrastructure, ...controlPlane, ...datapath, ...agentInvokes];
