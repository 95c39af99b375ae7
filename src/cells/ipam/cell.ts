/** The ipam cell's wiring: its module, providers and what they are built from (index.ts is its public face). */
import { config, module, provide, type DepsValues } from '../../hive/cell.js';
import { JobsToken } from '../../hive/jobs.js';
import { LoggerToken } from '../../hive/logger.js';
import { IPAMConfigToken, ipamConfigSchema } from './config.js';
import { NodeIPAM } from './ipam.js';
import { IPAMToken } from './types.js';

/** What the IPAM is built from. */
const ipamDeps = { cfg: IPAMConfigToken, jobs: JobsToken, log: LoggerToken } as const;

/** Builds the cell's IPAM and its expiration timer job. */
function newIPAM({ cfg, jobs, log }: DepsValues<typeof ipamDeps>): NodeIPAM {
  const ipam = new NodeIPAM(cfg, log);
  jobs.timer('ipam-expiration', async () => {
    ipam.releaseExpired();
  }, cfg.ipamExpirationInterval);
  log.info({ ipv4: cfg.ipv4Range || undefined, ipv6: cfg.ipv6Range || undefined }, 'IPAM pools configured');
  return ipam;
}

/** The IPAM cell. */
export const ipamCell = module(
  'ipam',
  'IP address management',
  config(IPAMConfigToken, ipamConfigSchema),
  provide(IPAMToken, newIPAM, ipamDeps),
);
