/**
 * The agent's cells, grouped like Cilium's daemon/cmd/cells.go: infrastructure (what every other
 * cell runs on), the control plane (endpoints, identities, policy, IPAM, the API) and the datapath.
 */
import type { Cell } from './hive/index.js';

/** Infrastructure: state directory, API server, metrics. */
export const infrastructure: readonly Cell[] = [];

/** Control plane: endpoints, identities, policy, IPAM, API handlers. */
export const controlPlane: readonly Cell[] = [];

/** Datapath: the selected datapath (memory or BPF), loader and maps. */
export const datapath: readonly Cell[] = [];

/** Every cell of the agent. */
export const agentCells: readonly Cell[] = [...infrastructure, ...controlPlane, ...datapath];
