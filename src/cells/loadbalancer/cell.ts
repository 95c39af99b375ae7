/** The loadbalancer cell's wiring: its module, providers and what they are built from (index.ts is its public face). */
import { config, invoke, module, provide, type DepsValues } from '../../hive/cell.js';
import { HealthToken } from '../../hive/health.js';
import { JobsToken } from '../../hive/jobs.js';
import { LifecycleToken } from '../../hive/lifecycle.js';
import { LoggerToken } from '../../hive/logger.js';
import { Reconciler } from '../../lib/reconciler/index.js';
import { LBMapsToken } from '../../datapath/lb-maps.js';
import { DatapathToken } from '../../datapath/types.js';
import { BpfDatapathConfigToken } from '../../datapath/bpf-config.js';
import { StateDirConfigToken } from '../statedir/index.js';
import { IPAMToken } from '../ipam/index.js';
import { ApiServerConfigToken, parseListenAddress } from '../api-server/index.js';
import { formatL3n4 } from './addr.js';
import { NodeAddresses } from './node-addrs.js';
import { interfaceLister, NODE_ADDRESS_POLL_MS, type AddressChanges } from './iface-lister.js';
import { LBConfigToken, lbConfigSchema } from './config.js';
import { selectLBMaps } from './lb-maps.js';
import { LBOps } from './lb-ops.js';
import { LBServiceManager } from './manager.js';
import { ServiceStore, serviceStoreFile } from './store.js';
import { ServiceManagerToken, type FrontendDesired } from './types.js';
import { token } from '../../hive/token.js';
import { nodeAddressesUnknown, sockAttachFailed } from './errors.js';
import { attachSockLB, detachSockLB, resolveCgroupRoot, sockLBProblems, SOCK_HOOKS, type SockLBAttachment } from './sock-lb.js';

/** How often the frontends' status is reported to the health tree. */
const STATUS_INTERVAL_MS = 5000;

/** Token for the reconciler of frontends into the LB maps. */
export const LBReconcilerToken = token<Reconciler<FrontendDesired>>('LBReconciler');

/** How often the node's addresses are listed again besides on every rtnetlink notification (a safety net). */
const NODE_ADDRESS_RESYNC_MS = 30_000;

/** Token for the node's own addresses (what no frontend but NodePort may take). */
export const NodeAddressesToken = token<NodeAddresses>('NodeAddresses');

/** What the node's addresses are built from. */
const nodeAddressesDeps = { api: ApiServerConfigToken, ipam: IPAMToken, lc: LifecycleToken, jobs: JobsToken, log: LoggerToken } as const;

/**
 * The node's own addresses: listed at start (before the services are restored, so a stored
 * service that collides comes back disabled), again on every link or address notification of the
 * agent's namespace (an address added disables the frontends on it at once) and every
 * NODE_ADDRESS_RESYNC_MS; the pod gateways of IPAM's pools and --api-listen-address with them.
 */
function newNodeAddresses({ api, ipam, lc, jobs, log }: DepsValues<typeof nodeAddressesDeps>): NodeAddresses {
  const ifaces = interfaceLister();
  const parsed = api.apiListenAddress ? parseListenAddress('api-listen-address', api.apiListenAddress) : undefined;
  // `:PORT` is served on loopback only (api-server/server.ts), not on every address
  const listen = parsed ? { raw: api.apiListenAddress, host: parsed.host || '127.0.0.1', port: parsed.port } : undefined;
  const addrs = new NodeAddresses({ interfaces: ifaces.list, localRoutes: ifaces.localRoutes, gateways: () => ipam.status(), ...(listen ? { api: listen } : {}) });
  let changes: AddressChanges | undefined;
  lc.append({
    name: 'lb-node-addresses',
    onStart: async () => {
      try {
        // the watch first: no change falls between it and the listing
        changes = ifaces.watch(() => {
          addrs.refresh().catch((err: unknown) => log.warn({ err: (err as Error).message }, 'listing the node\'s addresses after a change failed; the periodic listing retries'));
        });
        await addrs.refresh();
      } catch (err) {
        throw nodeAddressesUnknown(err);
      }
      if (changes.polled) log.warn({ addresses: addrs.interfaceAddresses().size, everyMs: NODE_ADDRESS_POLL_MS }, `the netlink addon is not built: the node's addresses are polled from the kernel's interface list (${changes.polled}); build it (npm run build) for rtnetlink notifications and local routes`);
      else log.info({ addresses: addrs.interfaceAddresses().size }, 'the node\'s addresses are listed and watched: no frontend but NodePort may take one');
    },
    onStop: async () => {
      changes?.close();
      changes = undefined;
      await ifaces.close();
    },
  });
  // once every start hook ran (a pod CIDR claimed in the cluster sets IPAM's pool, so its gateway,
  // after this cell's hooks), then every NODE_ADDRESS_RESYNC_MS
  jobs.oneShot('lb-node-addresses-started', async () => {
    await addrs.refresh();
  });
  jobs.timer('lb-node-addresses', async () => {
    await addrs.refresh();
  }, NODE_ADDRESS_RESYNC_MS);
  return addrs;
}

/** What the service manager is built from. */
const serviceManagerDeps = { cfg: LBConfigToken, sd: StateDirConfigToken, addrs: NodeAddressesToken, lc: LifecycleToken, jobs: JobsToken, log: LoggerToken } as const;

/**
 * Builds the service manager; its services come back from the store at start. The node's address
 * changes reach it by the observer job `node-address-changes` from construction on, inside their
 * `next` (a frontend on an address just added is disabled before the listing returns).
 */
function newServiceManager({ cfg, sd, addrs, lc, jobs, log }: DepsValues<typeof serviceManagerDeps>): LBServiceManager {
  const mgr = new LBServiceManager(Math.min(cfg.bpfLbMapMax, 65535), new ServiceStore(serviceStoreFile(sd.stateDir), log), cfg.nodePortRange, {
    addrs,
    onDisabled: (fe, why) => {
      if (why) log.warn({ frontend: formatL3n4(fe.address), service: fe.serviceKey, id: fe.id, why }, 'frontend disabled: it collides with the node; it stays out of the LB maps while it does');
      else log.info({ frontend: formatL3n4(fe.address), service: fe.serviceKey, id: fe.id }, 'frontend enabled again: it no longer collides with the node');
    },
  });
  jobs.observer('node-address-changes', addrs.changes$, () => mgr.recheck(), { immediate: true, sync: true });
  lc.append({
    name: 'lb-services-restore',
    onStart: async () => {
      const n = await mgr.restore();
      if (n) log.info({ services: n }, 'restored services from the state directory');
    },
    onStop: () => mgr.flushStore(),
  });
  return mgr;
}

/** What the LB maps are chosen from. */
const lbMapsDeps = { dp: DatapathToken, bpf: BpfDatapathConfigToken, cfg: LBConfigToken, log: LoggerToken } as const;

/** The LB maps: the datapath's own, in memory, or the pinned BPF maps (see selectLBMaps). */
function newLBMaps({ dp, bpf, cfg, log }: DepsValues<typeof lbMapsDeps>): ReturnType<typeof selectLBMaps> {
  return selectLBMaps(dp, bpf, cfg, log);
}

/** What the reconciler of the frontends is built from. */
const reconcilerDeps = {
  mgr: ServiceManagerToken, maps: LBMapsToken, cfg: LBConfigToken, bpf: BpfDatapathConfigToken, lc: LifecycleToken, jobs: JobsToken, health: HealthToken, log: LoggerToken,
} as const;

/**
 * Builds the reconciler of the frontends table into the LB maps: at start it takes over what the
 * kernel holds (backend IDs, frontends); the reconciler runs as the job `reconcile-lb-frontends`,
 * writes every desired frontend, then prunes what nobody desires; afterwards it prunes every
 * --bpf-map-prune-interval. The frontends' states go to the
 * module's health (degraded with the newest errors while some fail).
 */
function newReconciler({ mgr, maps, cfg, bpf, lc, jobs, health, log }: DepsValues<typeof reconcilerDeps>): Reconciler<FrontendDesired> {
  const ops = new LBOps(maps, { algorithm: cfg.bpfLbAlgorithm, maglevTableSize: cfg.bpfLbMaglevTableSize, maxBackends: cfg.bpfLbMapMax, noBackendResponse: cfg.serviceNoBackendResponse });
  const r = new Reconciler(mgr.frontends, ops, {
    pruneIntervalMs: bpf.bpfMapPruneInterval,
    onError: (key, err) => log.warn({ frontend: key, err: err.message }, 'writing a frontend into the LB maps failed; retried with backoff'),
  });
  lc.append({
    name: 'lb-maps-takeover',
    onStart: () => {
      const found = ops.restore();
      if (found) log.info({ frontends: found }, 'found frontends in the LB maps of a previous run');
    },
  });
  // the reconciler is a hive job (after the start hooks: the takeover above came first), with
  // the frontends table's state in its health scope after every round
  jobs.oneShot('reconcile-lb-frontends', (ctx) => r.run(ctx));
  const report = (): void => {
    const st = mgr.status();
    const off = mgr.disabled();
    const what = `${st.objects + off.length} frontends: ${st.done} done, ${st.pending} pending, ${st.errors} failing, ${off.length} disabled`;
    const problems = [...st.lastErrors, ...off.slice(0, 5).map((d) => `${d.frontend} disabled: ${d.why}`)];
    if (st.errors || off.length) health.degraded(`${what} (${problems.join('; ')})`);
    else health.ok(what);
  };
  jobs.timer('lb-frontends-status', async () => report(), STATUS_INTERVAL_MS);
  jobs.oneShot('lb-prune-restored', async () => {
    await r.flush();
    const { pruned } = await r.prune();
    if (pruned) log.info({ pruned }, 'removed frontends from the LB maps that no service has any more');
    report();
  });
  return r;
}

/** Token of socket load balancing's start hook (constructed after the reconciler: the LB maps are pinned by then). */
export const SockLBToken = token<{ readonly hook: string }>('SockLB');

/** What socket load balancing is built from (`lbReconciler` only orders it after the reconciler). */
const sockLBDeps = {
  dp: DatapathToken, maps: LBMapsToken, cfg: LBConfigToken, bpf: BpfDatapathConfigToken, lc: LifecycleToken, jobs: JobsToken, health: HealthToken, log: LoggerToken,
  lbReconciler: LBReconcilerToken,
} as const;

/**
 * Socket load balancing's start hook: with the BPF datapath and --bpf-lb-sock, attaches (or
 * atomically replaces) bpf_sock's programs at the cgroup of --cgroup-root; with
 * --bpf-lb-sock=false detaches what an earlier start attached; with the memory datapath it says
 * in one line that nothing is attached. A cgroup or program that cannot be used stops the start.
 * Every --bpf-map-prune-interval, links found gone are attached again (health scope socket-lb).
 */
function newSockLB({ dp, maps, cfg, bpf, lc, jobs, health, log }: DepsValues<typeof sockLBDeps>): { hook: string } {
  const hook = 'lb-sock';
  const h = health.scope('socket-lb');
  let cgroup: string | undefined;
  const attach = async (): Promise<SockLBAttachment> => attachSockLB({
    bpfRoot: bpf.bpfRoot, cgroup: cgroup!, revMapMax: cfg.bpfSockRevMapMax,
    onReplace: (x) => log.warn({ map: x.name, path: x.path, have: x.have, want: x.want }, 'replaced a pinned reverse-socket map of another layout'),
  });
  lc.append({
    name: hook,
    onStart: async () => {
      if (dp.mode !== 'bpf') {
        log.info({ datapath: dp.mode }, `socket load balancing not attached: the ${dp.mode} datapath has no cgroup programs (host processes do not reach services)`);
        h.ok(`not attached: the ${dp.mode} datapath`);
        return;
      }
      if (!cfg.bpfLbSock) {
        const n = detachSockLB(bpf.bpfRoot);
        if (n) log.info({ detached: n }, 'socket load balancing off (--bpf-lb-sock=false): detached the socket programs of an earlier start');
        h.ok('off (--bpf-lb-sock=false)');
        return;
      }
      cgroup = resolveCgroupRoot(cfg.cgroupRoot);
      void maps.services4; // the LB maps pinned (the kernel maps open on first use)
      let r: SockLBAttachment;
      try {
        r = await attach();
      } catch (err) {
        throw sockAttachFailed(cgroup, err);
      }
      const replaced = SOCK_HOOKS.filter((x) => r[x].replaced).length;
      log.info({ cgroup, programs: SOCK_HOOKS.length, replaced, moved: SOCK_HOOKS.filter((x) => r[x].moved).length }, replaced ? 'socket load balancing: programs replaced atomically' : 'socket load balancing attached');
      h.ok(`${SOCK_HOOKS.length} programs attached at ${cgroup}`);
    },
  });
  // links detached or unpinned behind the agent's back are attached again every prune round
  if (bpf.bpfMapPruneInterval > 0) {
    jobs.timer('lb-sock-check', async () => {
      if (!cgroup) return;
      const problems = sockLBProblems(bpf.bpfRoot, cgroup);
      if (!problems.length) return;
      log.warn({ problems }, 'socket load balancing: programs found detached; attaching them again');
      try {
        await attach();
        h.ok(`${SOCK_HOOKS.length} programs attached at ${cgroup} (attached again: ${problems.join('; ')})`);
      } catch (err) {
        h.degraded(`socket programs detached (${problems.join('; ')}) and attaching them again failed: ${(err as Error).message}`);
      }
    }, bpf.bpfMapPruneInterval);
  }
  return { hook };
}

/** The loadbalancer cell. */
export const loadBalancerCell = module(
  'loadbalancer',
  'Services: frontends and backends reconciled into the LB maps',
  config(LBConfigToken, lbConfigSchema),
  provide(NodeAddressesToken, newNodeAddresses, nodeAddressesDeps),
  provide(ServiceManagerToken, newServiceManager, serviceManagerDeps),
  provide(LBMapsToken, newLBMaps, lbMapsDeps),
  provide(LBReconcilerToken, newReconciler, reconcilerDeps),
  invoke('lb-reconciler', (_r: Reconciler<FrontendDesired>) => undefined, LBReconcilerToken),
  provide(SockLBToken, newSockLB, sockLBDeps),
  invoke('lb-sock', (_s: { hook: string }) => undefined, SockLBToken),
);
