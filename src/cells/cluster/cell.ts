/** The cluster cell's wiring: its module, providers and what they are built from (index.ts is its public face). */
import { join } from 'node:path';
import { config, invoke, module, provide, provideInto, type DepsValues } from '../../hive/cell.js';
import { token } from '../../hive/token.js';
import { HealthToken } from '../../hive/health.js';
import { JobsToken } from '../../hive/jobs.js';
import { LifecycleToken } from '../../hive/lifecycle.js';
import { LoggerToken } from '../../hive/logger.js';
import { DatapathToken } from '../../datapath/types.js';
import { ApiOperationsToken, ApiRoutersToken } from '../api-server/index.js';
import { EndpointManagerToken } from '../endpoint/index.js';
import { IPAMToken } from '../ipam/index.js';
import { KVStoreToken } from '../kvstore/index.js';
import { StateDirConfigToken } from '../statedir/index.js';
import { clusterPoolNeedsKVStore, ipamCannotSetPool } from './errors.js';
import { ClusterConfigToken, clusterConfigSchema } from './config.js';
import { PodCIDRClaimer } from './pod-cidr.js';
import { NodeRoutes } from './routes.js';
import { Netlink } from '../../netlink/index.js';
import { clusterRouter } from './api.js';
import { KVIPCache } from './ipcache.js';
import { detectNodeIP } from './node-ip.js';
import { KVNodeRegistry } from './nodes.js';
import { ClusterIPCacheToken, NodeRegistryToken, PodCIDRToken, type PodCIDR } from './types.js';

/** How often local endpoints are compared with what was published (identity changes without an event; cheap: no etcd call unless something changed). */
export const IPCACHE_RESYNC_MS = 250;

/** What the pod CIDR claim is built from. */
const podCIDRDeps = { kv: KVStoreToken, cfg: ClusterConfigToken, ipam: IPAMToken, sd: StateDirConfigToken, lc: LifecycleToken, jobs: JobsToken, log: LoggerToken } as const;

/**
 * Builds the pod CIDR claim: with --cluster-pool-ipv4-cidr, claimed in etcd at start and set as the
 * IPAM's IPv4 pool (claimed again after every new session lease: the observer job
 * `pod-cidr-reclaim`); otherwise the pool stays --ipv4-range.
 */
function newPodCIDR({ kv, cfg, ipam, sd, lc, jobs, log }: DepsValues<typeof podCIDRDeps>): PodCIDR {
  if (!cfg.clusterPoolIpv4Cidr) return { current: () => undefined };
  if (!kv.enabled) throw clusterPoolNeedsKVStore();
  if (!ipam.setPool) throw ipamCannotSetPool();
  const claimer = new PodCIDRClaimer(kv, cfg.clusterPoolIpv4Cidr, cfg.clusterPoolIpv4MaskSize, join(sd.stateDir, 'pod-cidr.json'), log);
  jobs.observer('pod-cidr-reclaim', kv.sessionRenewed$, () => claimer.onSessionRenewed(), { immediate: true, sync: true });
  lc.append({
    name: 'cluster-pod-cidr',
    onStart: async () => {
      ipam.setPool!('ipv4', await claimer.claim());
    },
    onStop: () => claimer.stop(),
  });
  return claimer;
}

/** What the node registry is built from (`podCIDR` only orders it after the claim). */
const nodeRegistryDeps = { kv: KVStoreToken, ipam: IPAMToken, podCIDR: PodCIDRToken, lc: LifecycleToken, jobs: JobsToken, health: HealthToken, log: LoggerToken } as const;

/**
 * Builds the node registry: this node from the flags and the IPAM pool (read at start); registered
 * and watched from start to stop, the count of nodes reported by the observer job `node-count`.
 */
function newNodeRegistry({ kv, ipam, lc, jobs, health, log }: DepsValues<typeof nodeRegistryDeps>): KVNodeRegistry {
  const reg = new KVNodeRegistry(kv, { name: kv.config.nodeName, cluster: kv.config.clusterName, ipv4: detectNodeIP(kv.config.nodeIp) }, () => ipam.status().find((p) => p.family === 'ipv4')?.cidr, jobs, log);
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
      jobs.observer('node-count', reg.events$, report, { immediate: true, sync: true });
    },
    onStop: () => reg.stop(),
  });
  return reg;
}

/** What the cluster ipcache is built from. */
const ipcacheDeps = { kv: KVStoreToken, nodes: NodeRegistryToken, eps: EndpointManagerToken, dp: DatapathToken, lc: LifecycleToken, jobs: JobsToken, log: LoggerToken } as const;

/** Builds the cluster ipcache: publishing and watching from start to stop, resynced on a timer. */
function newIPCache({ kv, nodes, eps, dp, lc, jobs, log }: DepsValues<typeof ipcacheDeps>): KVIPCache {
  const c = new KVIPCache(kv, nodes, eps, dp, jobs, log);
  if (!kv.enabled) return c;
  lc.append({ name: 'cluster-ipcache', onStart: () => c.start(), onStop: () => c.stop() });
  jobs.timer('ipcache-publish', () => c.sync(), IPCACHE_RESYNC_MS);
  return c;
}

/** How often the routes to other nodes are compared with the nodes and repaired. */
export const ROUTES_RESYNC_MS = 10_000;

/** What the routes to other nodes are built from. */
const nodeRoutesDeps = { kv: KVStoreToken, cfg: ClusterConfigToken, nodes: NodeRegistryToken, lc: LifecycleToken, jobs: JobsToken, health: HealthToken, log: LoggerToken } as const;

/**
 * With --auto-direct-node-routes (and a kvstore): routes to other nodes' pod CIDRs, from start on;
 * the nodes' changes reach them by the observer job `node-routes`.
 */
function newNodeRoutes({ kv, cfg, nodes, lc, jobs, health, log }: DepsValues<typeof nodeRoutesDeps>): NodeRoutes | undefined {
  if (!cfg.autoDirectNodeRoutes || !kv.enabled) return undefined;
  let nl: Netlink | undefined;
  const writer = {
    addRoute: (spec: Parameters<Netlink['addRoute']>[0]) => (nl ??= Netlink.open()).addRoute(spec),
    deleteRoute: (spec: Parameters<Netlink['deleteRoute']>[0]) => (nl ??= Netlink.open()).deleteRoute(spec),
  };
  const routes = new NodeRoutes(nodes, writer, health.scope('routes'), log);
  jobs.observer('node-routes', nodes.events$, (ev) => routes.onNodeEvent(ev), { immediate: true, sync: true });
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

/** What the cluster API router is built from. */
const routerDeps = { ops: ApiOperationsToken, nodes: NodeRegistryToken, ipcache: ClusterIPCacheToken } as const;

/** The cluster cell. */
export const clusterCell = module(
  'cluster',
  'Nodes and ipcache of the cluster (kvstore)',
  config(ClusterConfigToken, clusterConfigSchema),
  provide(PodCIDRToken, newPodCIDR, podCIDRDeps),
  provide(NodeRegistryToken, newNodeRegistry, nodeRegistryDeps),
  provide(NodeRoutesToken, newNodeRoutes, nodeRoutesDeps),
  invoke('cluster-routes', (_r: NodeRoutes | undefined) => undefined, NodeRoutesToken),
  provide(ClusterIPCacheToken, newIPCache, ipcacheDeps),
  provideInto(ApiRoutersToken, ({ ops, nodes, ipcache }: DepsValues<typeof routerDeps>) => ({ name: 'cluster', router: clusterRouter(ops, nodes, ipcache) }), routerDeps),
);
