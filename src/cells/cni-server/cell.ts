/** The cni-server cell's wiring: its module, providers and what they are built from (index.ts is its public face). */
import { join } from 'node:path';
import { config, invoke, module, provide, provideInto, type DepsValues } from '../../hive/cell.js';
import { JobsToken } from '../../hive/jobs.js';
import { LifecycleToken } from '../../hive/lifecycle.js';
import { LoggerToken } from '../../hive/logger.js';
import { token } from '../../hive/token.js';
import { ApiOperationsToken, ApiRoutersToken } from '../api-server/types.js';
import { EndpointRestorerToken } from '../endpoint/index.js';
import { EndpointAPIManagerToken, EndpointManagerToken } from '../endpoint/types.js';
import { IPAMConfigToken, IPAMToken } from '../ipam/index.js';
import { StateDirConfigToken } from '../statedir/index.js';
import { CniServerConfigToken, cniServerConfigSchema } from './config.js';
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

/** What the server is built from (the endpoint restorer: the server serves once its restore is done). */
const serverDeps = {
  ipam: IPAMToken,
  endpoints: EndpointAPIManagerToken,
  manager: EndpointManagerToken,
  net: CniNetOpsToken,
  cfg: CniServerConfigToken,
  ipamCfg: IPAMConfigToken,
  stateDir: StateDirConfigToken,
  restorer: EndpointRestorerToken,
  lc: LifecycleToken,
  jobs: JobsToken,
  log: LoggerToken,
} as const;

/**
 * Builds the server. Once the agent has started and its endpoints are restored: removes the host
 * interfaces of ADDs the previous agent did not finish, replays the DEL queue, then serves.
 */
function newServer(p: DepsValues<typeof serverDeps>): CniServer {
  const cfg = { ...p.cfg, ipamMode: p.ipamCfg.ipam };
  if (cfg.ipamMode === 'delegated-plugin') p.log.info('IPAM delegated: pod addresses come from the IPAM plugin of each network configuration');
  const journal = new AttachmentJournal(join(p.stateDir.stateDir, JOURNAL_DIR));
  const ipamRecords = new IpamRecords(join(p.stateDir.stateDir, IPAM_RECORDS_DIR));
  const server = new CniServer({ ipam: p.ipam, endpoints: p.endpoints, manager: p.manager, net: p.net, cfg, ledger: new AttachmentLedger(), journal, ipamRecords, log: p.log });
  p.lc.append({
    name: 'cni-server',
    onStop: async () => {
      server.setReady(false);
      await p.net.close();
    },
  });
  p.jobs.oneShot('cni-delete-queue', async () => {
    // the endpoint cell's restore is done: restored endpoints regenerated, stale datapath state gone
    await p.restorer.done;
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
  provide(CniServerToken, newServer, serverDeps),
  provideInto(ApiRoutersToken, ({ ops, server }) => ({ name: 'cni', router: cniRouter(ops, server) }), { ops: ApiOperationsToken, server: CniServerToken }),
  invoke('cni-server', (_s: CniServer) => undefined, CniServerToken),
);
