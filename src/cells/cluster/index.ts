/**
 * The cluster cell (module `cluster`): in kvstore mode, this node registered under
 * `cilium/state/nodes/v1/<cluster>/<name>` and every other node watched; local endpoints published
 * under `cilium/state/ip/v1/default/<ip>` and other nodes' endpoints and addresses written into the
 * datapath's ipcache. The API: GET /cluster/nodes, GET /ip, GET /node/ids. Without --kvstore it
 * knows only this node and its endpoints. Needs the kvstore, IPAM, endpoint and datapath cells.
 */
export * from './types.js';
export { KVNodeRegistry } from './nodes.js';
export { KVIPCache } from './ipcache.js';
export { nodeJson, parseNodeJson } from './node-json.js';
export { ipJson, parseIPJson, type IPRecord } from './ip-json.js';
export { detectNodeIP } from './node-ip.js';
export { clusterRouter, nodeElement } from './api.js';
export { ClusterConfigToken, clusterConfigSchema, type ClusterConfig } from './config.js';
export { PodCIDRClaimer, PODCIDR_PREFIX, subnets } from './pod-cidr.js';
export { NodeRoutes, type RouteWriter } from './routes.js';
export { ClusterError, type ClusterErrorCode } from './errors.js';
export * from './cell.js';
