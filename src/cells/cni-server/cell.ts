/** The cni-server cell's wiring: its module, providers and what they are built from (index.ts is its public face). */
import { join } from 'node:path';
import { config, invoke, module, provide, provideInto } from '../../hive/cell.js';
import { JobsToken, type Jobs } from '../../hive/jobs.js';
import { LifecycleToken, type Lifecycle } from '../../hive/lifecycle.js';
import { LoggerToken, type Logger } from '../../hive/logger.js';
import { token } from '../../hive/token.js';
import { ApiOperationsToken, ApiRoutersToken, type ApiOperations } from '../api-server/types.js';
import { EndpointRestorerToken, type EndpointRestorer } from '../endpoint/index.js';
import { EndpointAPIManagerToken, EndpointManagerToken, type EndpointAPIManager, type EndpointManager } from '../endpoint/types.js';
import { IPAMConfigToken, IPAMToken, type IPAM, type IPAMConfig } from '../ipam/index.js';
import { StateDirConfigToken, type StateDirConfig } from '../statedir/index.js';
import { CniServerConfigToken, cniServerConfigSchema, type CniServerConfig } from './config.js';
import { AttachmentJournal, JOURNAL_DIR } from './journal.js';
import { IPAM_RECORDS_DIR, IpamRecords } from './ipam-records.js';
import { AttachmentLedger } from './ledger.js';
import { NetlinkOps, type NetOps } from './netops.js';
import { cniRouter } from './routes.js';
import { CniServer } from './server.js';

/** Token for the CNI server. */
export const CniServerToken = token<CniServer>('CniServer');
/** Token for the netlink operations the CNI server uses (replace it in tests). */
export const CniNetOpsToken = token<NetOps>('CniNetOps');

interface ServerParams {
  readonly ipam: IPAM;
  readonly endpoints: EndpointAPIManager;
  readonly manager: EndpointManager;
  readonly net: NetOps;
  readonly cfg: CniServerConfig;
  readonly stateDir: string;
  /** Settles once the endpoint cell's restore is done (restored endpoints regenerated, stale datapath state gone). */
  readonly restored: Promise<unknown>;
  readonly ipamCfg: IPAMConfig;
  readonly lc: Lifecycle;
  readonly jobs: Jobs;
  readonly log: Logger;
}

/**
 * Builds the server. Once the agent has started and its endpoints are restored: removes the host
 * interfaces of ADDs the previous agent did not finish, replays the DEL queue, then serves.
 */
function newServer(p: ServerParams): CniServer {
  const cfg = { ...p.cfg, ipamMode: p.ipamCfg.ipam };
  if (cfg.ipamMode === 'delegated-plugin') p.log.info('IPAM delegated: pod addresses come from the IPAM plugin of each network configuration');
  const journal = new AttachmentJournal(join(p.stateDir, JOURNAL_DIR));
  const ipamRecords = new IpamRecords(join(p.stateDir, IPAM_RECORDS_DIR));
  const server = new CniServer({ ipam: p.ipam, endpoints: p.endpoints, manager: p.manager, net: p.net, cfg, ledger: new AttachmentLedger(), journal, ipamRecords, log: p.log });
  p.lc.append({
    name: 'cni-server',
    onStop: async () => {
      server.setReady(false);
      await p.net.close();
    },
  });
  p.jobs.oneShot('cni-delete-queue', async () => {
    await p.restored;
    // nothing is in flight before the server is ready: an interface no endpoint holds is an interrupted ADD's
    await server.removeOrphans('at start: left by an ADD the previous agent did not finish').catch((err: Error) => {
      p.log.error({ err: err.message }, 'CNI: cannot read the journal of host interfaces; none removed at start (CNI GC retries)');
    });
    const first = await server.replayDeleteQueue(p.cfg.cniDeleteQueueDir);
    server.setReady(true);
    // DELs the shim queued while this start was in progress (unless the directory cannot be listed).
    if (first.unreadable === undefined) await server.replayDeleteQueue(p.cfg.cniDeleteQueueDir);
  });
  return server;
}

/** The CNI server cell. */
export const cniServerCell = module(
  'cni-server',
  'CNI server: runs the commands the cellium-cni shim forwards',
  config(CniServerConfigToken, cniServerConfigSchema),
  provide(CniNetOpsToken, () => new NetlinkOps()),
  provide(
    CniServerToken,
    (ipam: IPAM, endpoints: EndpointAPIManager, manager: EndpointManager, net: NetOps, cfg: CniServerConfig, ipamCfg: IPAMConfig, sd: StateDirConfig, restorer: EndpointRestorer, lc: Lifecycle, jobs: Jobs, log: Logger) =>
      newServer({ ipam, endpoints, manager, net, cfg, ipamCfg, stateDir: sd.stateDir, restored: restorer.done, lc, jobs, log }),
    IPAMToken, EndpointAPIManagerToken, EndpointManagerToken, CniNetOpsToken, CniServerConfigToken, IPAMConfigToken, StateDirConfigToken, EndpointRestorerToken, LifecycleToken, JobsToken, LoggerToken,
  ),
  provideInto(ApiRoutersToken, (ops: ApiOperations, server: CniServer) => ({ name: 'cni', router: cniRouter(ops, server) }), ApiOperationsToken, CniServerToken),
  invoke('cni-server', (_s: CniServer) => undefined, CniServerToken),
);
