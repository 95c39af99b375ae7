/** The loadbalancer cell's wiring: its module, providers and what they are built from (index.ts is its public face). */
import { config, module, provide } from '../../hive/cell.js';
import { LifecycleToken, type Lifecycle } from '../../hive/lifecycle.js';
import { LoggerToken, type Logger } from '../../hive/logger.js';
import { StateDirConfigToken, type StateDirConfig } from '../statedir/index.js';
import { LBConfigToken, lbConfigSchema, type LBConfig } from './config.js';
import { LBServiceManager } from './manager.js';
import { ServiceStore, serviceStoreFile } from './store.js';
import { ServiceManagerToken } from './types.js';

/** Builds the service manager; its services come back from the store at start. */
function newServiceManager(cfg: LBConfig, sd: StateDirConfig, lc: Lifecycle, log: Logger): LBServiceManager {
  const mgr = new LBServiceManager(Math.min(cfg.bpfLbMapMax, 65535), new ServiceStore(serviceStoreFile(sd.stateDir), log));
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

/** The loadbalancer cell. */
export const loadBalancerCell = module(
  'loadbalancer',
  'Services: frontends and backends reconciled into the LB maps',
  config(LBConfigToken, lbConfigSchema),
  provide(ServiceManagerToken, newServiceManager, LBConfigToken, StateDirConfigToken, LifecycleToken, LoggerToken),
);
