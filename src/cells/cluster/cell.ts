/** The cluster cell's wiring: its module, providers and what they are built from (index.ts is its public face). */
import { join } from 'node:path';
import { config, invoke, module, provide, provideInto } from '../../hive/cell.js';
import { token } from '../../hive/token.js';
import { HealthToken, type Health } from '../../hive/health.js';
import { JobsToken, type Jobs } from '../../hive/jobs.js';
import { LifecycleToken, type Lifecycle } from '../../hive/lifecycle.js';
import { LoggerToken, type Logger } from '../../hive/logger.js';
import { DatapathToken, type Datapath } from '../../datapath/types.js';
import { ApiOperationsToken, ApiRoutersToken, type ApiOperations } from '../api-server/index.js';
import { EndpointManagerToken, type EndpointManager } from '../endpoint/index.js';
import { IPAMToken, type IPAM } from '../ipam/index.js';
import { KVStoreToken, type KVStore } from '../kvstore/index.js';
import { StateDirConfigToken, type StateDirConfig } from '../statedir/index.js';
import { clusterPoolNeedsKVStore, ipamCannotSetPool } from './errors.js';
import { ClusterConfigToken, clusterConfigSchema, type ClusterConfig } from './config.js';
import { PodCIDRClaimer } from './pod-cidr.js';
import { NodeRoutes } from './routes.js';
import { Netlink } from '../../netlink/index.js';
import { clusterRouter } from './api.js';
import { KVIPCache } from './ipcache.js';
import { detectNodeIP } from './node-ip.js';
import { KVNodeRegistry } from './nodes.js';
import { ClusterIPCacheToken, NodeRegistryToken, PodCIDRToken, type ClusterIPCache, type NodeRegistry, type PodCIDR } from './types.js';

/** How often local endpoints are compared with what was published (identity changes without an event; cheap: no etcd call unless something changed). */
export const IPCACHE_RESYNC_MS = 250;

/**
 * Builds the pod CIDR claim: with --cluster-pool-ipv4-cidr, claimed in etcd at start and set as the
 * IPAM's IPv4 pool; otherwise the pool stays --ipv4-range.
 */
function newPodCIDR(kv: KVStore, cfg: ClusterConfig, ipam: IPAM, sd: StateDirConfig, lc: Lifecycle, log: Logger): PodCIDR {
  if (!cfg.clusterPoolIpv4Cidr) return { current: () => undefined };
  if (!kv.enabled) throw clusterPoolNeedsKVStore();
  if (!ipam.setPool) throw ipamCannotSetPool();
  const claimer = new PodCIDRClaimer(kv, cfg.clusterPoolIpv4Cidr, cfg.clusterPoolIpv4MaskSize, join(sd.stateDir, 'pod-cidr.json'), log);
  lc.append({
    name: 'cluster-pod-cidr',
    onStart: async () => {
      ipam.setPool!('ipv4', await claimer.claim());
    },
    onStop: () => claimer.stop(),
  });
  return claimer;
}

/** Builds the node registry: this node from the flags and the IPAM pool (read at start); registered and watched from start to stop. */
function newNodeRegistry(kv: KVStore, ipam: IPAM, _claim: PodCIDR, lc: Lifecycle, health: Health, log: Logger): KVNodeRegistry {
  const reg = new KVNodeRegistry(kv, { name: kv.config.nodeName, cluster: kv.config.clusterName, ipv4: detectNodeIP(kv.config.nodeIp) }, () => ipam.status().find((p) => p.family === 'ipv4')?.cidr, log);
  const self = `${kv.config.clusterName}/${kv.config.nodeName}`;
  if (!kv.enabled) {
    health.ok(`single node ${self} (no --kvstore)`);
    lc.append({ name: 'cluster-nodes', onStart: () => reg.start() });
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

/** How often the routes to other nodes are compared with the nodes and repaired. */
export const ROUTES_RESYNC_MS = 10_000;

/** With --auto-direct-node-routes (and a kvstore): routes to other nodes' pod CIDRs, from start on. */
function newNodeRoutes(kv: KVStore, cfg: ClusterConfig, nodes: NodeRegistry, lc: Lifecycle, jobs: Jobs, health: Health, log: Logger): NodeRoutes | undefined {
  if (!cfg.autoDirectNodeRoutes || !kv.enabled) return undefined;
  let nl: Netlink | undefined;
  const writer = {
    addRoute: (spec: Parameters<Netlink['addRoute']>[0]) => (nl ??= Netlink.open()).addRoute(spec),
    deleteRoute: (spec: Parameters<Netlink['deleteRoute']>[0]) => (nl ??= Netlink.open()).deleteRoute(spec),
  };
  const routes = new NodeRoutes(nodes, writer, health.scope('routes'), log);
  lc.append({
    name: 'cluster-routes',
    onStart: () => routes.start(),
    onStop: async () => {
      await routes.stop();
      await nl?.close();
    },
  });
  jobs.timer('node-routes-resync', () => routes.resync(), ROUTES_RESYNC_MS);
  return routes;
}

/** Token for the routes to other nodes (undefined without --auto-direct-node-routes). */
export const NodeRoutesToken = token<NodeRoutes | undefined>('NodeRoutes');

/** The cluster cell. */
export const clusterCell = module(
  'cluster',
  'Nodes and ipcache of the cluster (kvstore)',
  config(ClusterConfigToken, clusterConfigSchema),
  provide(PodCIDRToken, newPodCIDR, KVStoreToken, ClusterConfigToken, IPAMToken, StateDirConfigToken, LifecycleToken, LoggerToken),
  provide(NodeRegistryToken, newNodeRegistry, KVStoreToken, IPAMToken, PodCIDRToken, LifecycleToken, HealthToken, LoggerToken),
  provide(NodeRoutesToken, newNodeRoutes, KVStoreToken, ClusterConfigToken, NodeRegistryToken, LifecycleToken, JobsToken, HealthToken, LoggerToken),
  invoke('cluster-routes', (_r: NodeRoutes | undefined) => undefined, NodeRoutesToken),
  provide(ClusterIPCacheToken, newIPCache, KVStoreToken, NodeRegistryToken, EndpointManagerToken, DatapathToken, LifecycleToken, JobsToken, LoggerToken),
  provideInto(
    ApiRoutersToken,
    (ops: ApiOperations, nodes: NodeRegistry, ipcache: ClusterIPCache) => ({ name: 'cluster', router: clusterRouter(ops, nodes, ipcache) }),
    ApiOperationsToken, NodeRegistryToken, ClusterIPCacheToken,
  ),
);
