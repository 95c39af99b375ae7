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
import { CiliumEndpointsToken, K8sClientToken, K8sConfigToken, K8sCrdsToken, newResource, type K8sClient } from '../k8s/index.js';
import { electionTiming, IdentityApi, LeaseElector } from '../k8s-identity/index.js';
import { CepIPCache } from './cep-ipcache.js';
import { CiliumNodeApi, type CiliumNode } from './ciliumnode.js';
import { K8sPodCIDR } from './k8s-pod-cidr.js';
import { CiliumNodeRegistry, type K8sNode } from './k8s-nodes.js';
import { PodCIDRAllocator } from './pod-cidr-allocator.js';
import { AllocatorLoop } from './allocator-loop.js';
import { StateDirConfigToken } from '../statedir/index.js';
import { clusterPoolNeedsKVStore, ipamCannotSetPool } from './errors.js';
import { ClusterConfigToken, clusterConfigSchema } from './config.js';
import { PodCIDRClaimer } from './pod-cidr.js';
import { NodeRoutes } from './routes.js';
import { Netlink } from '../../netlink/index.js';
import { clusterRouter } from './api.js';
import { KVIPCache } from './ipcache.js';
import { detectNodeIP } from '../../lib/node-ip.js';
import { KVNodeRegistry } from './nodes.js';
import { ClusterIPCacheToken, NodeRegistryToken, PodCIDRToken, type ClusterIPCache, type NodeRegistry, type PodCIDR } from './types.js';

/** How often local endpoints are compared with what was published (identity changes without an event; cheap: no etcd call unless something changed). */
export const IPCACHE_RESYNC_MS = 250;

/** The name of the pod CIDR allocator's Lease (Kubernetes mode: one agent allocates). */
export const POD_CIDR_LEASE_NAME = 'cellium-pod-cidr-allocator';

/** The namespace of that Lease. */
export const POD_CIDR_LEASE_NAMESPACE = 'kube-system';

/** The Lease duration of the pod CIDR allocator (client-go's default). */
const POD_CIDR_LEASE_MS = 15_000;

/** Whether the cluster lives in the apiserver: Kubernetes without --kvstore (Cilium's CRD mode). */
function crdMode(kvEnabled: boolean, client: K8sClient): boolean {
  return !kvEnabled && client.enabled;
}

/** What the pod CIDR claim is built from (`crds`: the CRD registration starts before its wait for the CiliumNode). */
const podCIDRDeps = {
  kv: KVStoreToken, client: K8sClientToken, crds: K8sCrdsToken, k8s: K8sConfigToken, cfg: ClusterConfigToken, ipam: IPAMToken, sd: StateDirConfigToken,
  lc: LifecycleToken, jobs: JobsToken, health: HealthToken, log: LoggerToken,
} as const;

/**
 * Builds the pod CIDR claim: with --cluster-pool-ipv4-cidr, claimed in etcd at start (claimed again
 * after every new session lease: the observer job `pod-cidr-reclaim`), or in Kubernetes mode
 * waited for in this node's CiliumNode (the loop started by the hook `pod-cidr-allocator` runs the
 * Lease election and, on the holder, the allocation rounds), then set as the IPAM's IPv4 pool;
 * otherwise the pool stays --ipv4-range.
 */
function newPodCIDR(d: DepsValues<typeof podCIDRDeps>): PodCIDR {
  const { kv, client, cfg, ipam, sd, lc, jobs, log } = d;
  if (!cfg.clusterPoolIpv4Cidr) return { current: () => undefined };
  if (!kv.enabled && !client.enabled) throw clusterPoolNeedsKVStore();
  if (!ipam.setPool) throw ipamCannotSetPool();
  const stateFile = join(sd.stateDir, 'pod-cidr.json');
  if (crdMode(kv.enabled, client)) return newK8sPodCIDR(d, stateFile);
  const claimer = new PodCIDRClaimer(kv, cfg.clusterPoolIpv4Cidr, cfg.clusterPoolIpv4MaskSize, stateFile, log);
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

/** Kubernetes mode of newPodCIDR: the elected allocator, and this node's wait for its CIDR. */
function newK8sPodCIDR({ kv, client, k8s, cfg, ipam, lc, health, log }: DepsValues<typeof podCIDRDeps>, stateFile: string): PodCIDR {
  const api = new CiliumNodeApi(client);
  const timing = electionTiming(POD_CIDR_LEASE_MS);
  const elector = new LeaseElector(new IdentityApi(client), POD_CIDR_LEASE_NAMESPACE, POD_CIDR_LEASE_NAME, k8s.k8sNodeName, timing, log, undefined, 'pod CIDR allocator');
  const allocator = new PodCIDRAllocator(api, cfg.clusterPoolIpv4Cidr, cfg.clusterPoolIpv4MaskSize, () => elector.isLeader(), log);
  const loop = new AllocatorLoop(elector, allocator, health.scope('pod-cidr-allocator'), log);
  lc.append({ name: 'pod-cidr-allocator', onStart: () => loop.start(), onStop: () => loop.stop() });
  const wait = new K8sPodCIDR(api, {
    node: k8s.k8sNodeName, ipv4: detectNodeIP(kv.config.nodeIp), pool: cfg.clusterPoolIpv4Cidr, mask: cfg.clusterPoolIpv4MaskSize, stateFile, waitMs: cfg.clusterPoolWaitTimeout,
  }, log);
  lc.append({
    name: 'cluster-pod-cidr',
    onStart: async () => {
      ipam.setPool!('ipv4', await wait.claim());
    },
  });
  return wait;
}

/** What the node registry is built from (`podCIDR` only orders it after the claim, `crds` after the CRD registration). */
const nodeRegistryDeps = {
  kv: KVStoreToken, client: K8sClientToken, crds: K8sCrdsToken, k8s: K8sConfigToken, ipam: IPAMToken, podCIDR: PodCIDRToken, lc: LifecycleToken, jobs: JobsToken, health: HealthToken, log: LoggerToken,
} as const;

/**
 * Builds the node registry: this node from the flags and the IPAM pool (read at start); registered
 * and watched from start to stop (in etcd with --kvstore, as CiliumNodes with Kubernetes), the
 * count of nodes reported by the observer job `node-count`.
 */
function newNodeRegistry({ kv, client, k8s, ipam, podCIDR, lc, jobs, health, log }: DepsValues<typeof nodeRegistryDeps>): NodeRegistry {
  const pool = (): string | undefined => ipam.status().find((p) => p.family === 'ipv4')?.cidr;
  const self = `${kv.config.clusterName}/${crdMode(kv.enabled, client) ? k8s.k8sNodeName : kv.config.nodeName}`;
  let reg: KVNodeRegistry | CiliumNodeRegistry;
  if (crdMode(kv.enabled, client)) {
    const resource = newResource<CiliumNode>(client, lc, health, log, 'ciliumnodes', { path: '/apis/cilium.io/v2/ciliumnodes', minBackoffMs: 500, maxBackoffMs: 30_000 });
    const ownNode = newResource<K8sNode>(client, lc, health, log, 'own-node', { path: '/api/v1/nodes', fieldSelector: `metadata.name=${k8s.k8sNodeName}`, minBackoffMs: 500, maxBackoffMs: 30_000 });
    reg = new CiliumNodeRegistry(new CiliumNodeApi(client), resource, ownNode, { name: k8s.k8sNodeName, cluster: kv.config.clusterName, ipv4: detectNodeIP(kv.config.nodeIp) },
      () => ({ cidr: pool(), fixed: podCIDR.current() === undefined }), jobs, log);
  } else {
    reg = new KVNodeRegistry(kv, { name: kv.config.nodeName, cluster: kv.config.clusterName, ipv4: detectNodeIP(kv.config.nodeIp) }, pool, jobs, log);
  }
  if (!kv.enabled && !client.enabled) {
    health.ok(`single node ${self} (no --kvstore, no Kubernetes)`);
    lc.append({ name: 'cluster-nodes', onStart: () => reg.start() });
    return reg;
  }
  const where = kv.enabled ? 'registered' : 'CiliumNode written';
  const report = (): void => health.ok(`${self} ${where}; ${reg.list().length} node(s) known`);
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
const ipcacheDeps = {
  kv: KVStoreToken, client: K8sClientToken, ceps: CiliumEndpointsToken, nodes: NodeRegistryToken, eps: EndpointManagerToken, dp: DatapathToken,
  lc: LifecycleToken, jobs: JobsToken, log: LoggerToken,
} as const;

/**
 * Builds the cluster ipcache: with --kvstore publishing and watching from start to stop, resynced
 * on a timer; in Kubernetes mode other nodes' CiliumEndpoints and CiliumNodes followed by the
 * observer jobs `ipcache-ciliumendpoints` and `ipcache-nodes`.
 */
function newIPCache({ kv, client, ceps, nodes, eps, dp, lc, jobs, log }: DepsValues<typeof ipcacheDeps>): ClusterIPCache {
  if (crdMode(kv.enabled, client) && ceps) {
    const c = new CepIPCache(nodes, eps, dp, log);
    const now = { immediate: true, sync: true } as const;
    lc.append({
      name: 'cluster-ipcache',
      onStart: () => {
        for (const n of nodes.list()) if (!n.local) c.onNode({ kind: 'upsert', node: n });
        jobs.observer('ipcache-nodes', nodes.events$, (ev) => c.onNode(ev), now);
        jobs.observer('ipcache-ciliumendpoints', ceps.events(), (ev) => c.onCep(ev), now);
      },
    });
    return c;
  }
  const c = new KVIPCache(kv, nodes, eps, dp, jobs, log);
  if (!kv.enabled) return c;
  lc.append({ name: 'cluster-ipcache', onStart: () => c.start(), onStop: () => c.stop() });
  jobs.timer('ipcache-publish', () => c.sync(), IPCACHE_RESYNC_MS);
  return c;
}

/** How often the routes to other nodes are compared with the nodes and repaired. */
export const ROUTES_RESYNC_MS = 10_000;

/** What the routes to other nodes are built from. */
const nodeRoutesDeps = { kv: KVStoreToken, client: K8sClientToken, cfg: ClusterConfigToken, nodes: NodeRegistryToken, lc: LifecycleToken, jobs: JobsToken, health: HealthToken, log: LoggerToken } as const;

/**
 * With --auto-direct-node-routes (and a kvstore or Kubernetes): routes to other nodes' pod CIDRs, from start on;
 * the nodes' changes reach them by the observer job `node-routes`.
 */
function newNodeRoutes({ kv, client, cfg, nodes, lc, jobs, health, log }: DepsValues<typeof nodeRoutesDeps>): NodeRoutes | undefined {
  if (!cfg.autoDirectNodeRoutes || (!kv.enabled && !client.enabled)) return undefined;
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
  'Nodes and ipcache of the cluster (kvstore, or CiliumNodes and CiliumEndpoints)',
  config(ClusterConfigToken, clusterConfigSchema),
  provide(PodCIDRToken, newPodCIDR, podCIDRDeps),
  provide(NodeRegistryToken, newNodeRegistry, nodeRegistryDeps),
  provide(NodeRoutesToken, newNodeRoutes, nodeRoutesDeps),
  invoke('cluster-routes', (_r: NodeRoutes | undefined) => undefined, NodeRoutesToken),
  provide(ClusterIPCacheToken, newIPCache, ipcacheDeps),
  provideInto(ApiRoutersToken, ({ ops, nodes, ipcache }: DepsValues<typeof routerDeps>) => ({ name: 'cluster', router: clusterRouter(ops, nodes, ipcache) }), routerDeps),
);
