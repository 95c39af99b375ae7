/**
 * The agent status collector (module `agent-status`): gathers what GET /healthz reports in
 * Cilium's StatusResponse shape: the agent's state (from the hive's health tree), controllers,
 * IPAM, the identity range, the datapath and its BPF maps, and the health tree itself. Like
 * Cilium's status collector, the maps probe (each map's size, DatapathMaps.summary) runs in the background
 * every STATUS_PROBE_INTERVAL_MS and /healthz answers with its last result.
 */
export * from './cell.js';
