/** The cluster cell's wiring: its module, providers and what they are built from (index.ts is its public face). */
import { module, provide, provideInto } from '../../hive/cell.js';
import { HealthToken, type Health } from '../../hive/health.js';
import { JobsToken, type Jobs } from '../../hive/jobs.js';
import { LifecycleToken, type Lifecycle } from '../../hive/lifecycle.js';
import { LoggerToken, type Logger } from '../../hive/logger.js';
import { DatapathToken, type Datapath } from '../../datapath/types.js';
import { ApiOperationsToken, ApiRoutersToken, type ApiOperations } from '../api-server/index.js';
import { EndpointManagerToken, type EndpointManager } from '../endpoint/index.js';
import { IPAMToken, type IPAM } from '../ipam/index.js';
import { KVStoreToken, type KVStore } from '../kvstore/index.js';
import { clusterRouter } from './api.js';
import { KVIPCache } from './ipcache.js';
import { detectNodeIP } from './node-ip.js';
import { KVNodeRegistry } from './nodes.js';
import { ClusterIPCacheToken, NodeRegistryToken, type ClusterIPCache, type NodeRegistry } from './types.js';

/** How often local endpoints are compared with what was published (identity changes without an event). */
export const IPCACHE_RESYNC_MS = 1000;

/** Builds the node registry: this node from the flags and the IPAM pool; registered and watched from start to stop. */
function newNodeRegistry(kv: KVStore, ipam: IPAM, lc: Lifecycle, health: Health, log: Logger): KVNodeRegistry {
  const pool = ipam.status().find((p) => p.family === 'ipv4');
  const reg = new KVNodeRegistry(kv, {
    name: kv.config.nodeName, cluster: kv.config.clusterName, ipv4: detectNodeIP(kv.config.nodeIp),
    ...(pool ? { ipv4AllocCidr: pool.cidr } : {}),
  }, log);
  const self = `${kv.config.clusterName}/${kv.config.nodeName}`;
  if (!kv.enabled) {
    health.ok(`single node ${self} (no --kvstore)`);
    return reg;
  }
  const report = (): void => health.ok(`${self} registered; ${reg.list().length} node(s) known`);
  lc.append({
    name: 'cluster-nodes',
    onStart: async () => {
      await reg.start();
      report();
      reg.events$.subscribe(report);
    },
    onStop: () => reg.stop(),
  });
  return reg;
}

/** Builds the cluster ipcache: publishing and watching from start to stop, resynced on a timer. */
function newIPCache(kv: KVStore, nodes: NodeRegistry, eps: EndpointManager, dp: Datapath, lc: Lifecycle, jobs: Jobs, log: Logger): KVIPCache {
  const c = new KVIPCache(kv, nodes, eps, dp, log);
  if (!kv.enabled) return c;
  lc.append({ name: 'cluster-ipcache', onStart: () => c.start(), onStop: () => c.stop() });
  jobs.timer('ipcache-publish', () => c.sync(), IPCACHE_RESYNC_MS);
  return c;
}

/** The cluster cell. */
export const clusterCell = module(
  'cluster',
  'Nodes and ipcache of the cluster (kvstore)',
  provide(NodeRegistryToken, newNodeRegistry, KVStoreToken, IPAMToken, LifecycleToken, HealthToken, LoggerToken),
  provide(ClusterIPCacheToken, newIPCache, KVStoreToken, NodeRegistryToken, EndpointManagerToken, DatapathToken, LifecycleToken, JobsToken, LoggerToken),
  provideInto(
    ApiRoutersToken,
    (ops: ApiOperations, nodes: NodeRegistry, ipcache: ClusterIPCache) => ({ name: 'cluster', router: clusterRouter(ops, nodes, ipcache) }),
    ApiOperationsToken, NodeRegistryToken, ClusterIPCacheToken,
  ),
);
