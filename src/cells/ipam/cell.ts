/** The ipam cell's wiring: its module, providers and what they are built from (index.ts is its public face). */
import { config, module, provide } from '../../hive/cell.js';
import { JobsToken, type Jobs } from '../../hive/jobs.js';
import { LoggerToken, type Logger } from '../../hive/logger.js';
import { IPAMConfigToken, ipamConfigSchema, type IPAMConfig } from './config.js';
import { NodeIPAM } from './ipam.js';
import { IPAMToken } from './types.js';

/** Builds the cell's IPAM and its expiration timer job. */
function newIPAM(cfg: IPAMConfig, jobs: Jobs, log: Logger): NodeIPAM {
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
  provide(IPAMToken, newIPAM, IPAMConfigToken, JobsToken, LoggerToken),
);
