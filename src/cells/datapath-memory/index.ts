/**
 * The in-memory datapath (`--datapath-mode=memory`, and `auto` until a BPF datapath asks to be
 * preferred): real maps in memory, a loader that records loaded configurations, and the verdict
 * function of the shared verdict model. Its cell contributes memoryDatapathProvider to the datapath
 * cell's providers, as the BPF datapath cell does.
 */
import { module, provideInto } from '../../hive/cell.js';
import type { CtTimeouts } from '../../datapath/conntrack.js';
import { ctTimeoutsOf, DatapathConfigToken, DatapathProvidersToken, type DatapathConfig, type DatapathProvider } from '../datapath/index.js';
import { MemoryDatapath } from './datapath.js';

export { MemoryDatapath, monotonicClock, type MemoryDatapathOptions } from './datapath.js';
export { MemoryMaps } from './maps.js';
export { MemoryLoader, sameConfig, type LoadRecord } from './loader.js';

/** The memory datapath's provider for the selection (always available; never preferred over BPF in auto mode). */
export function memoryDatapathProvider(ctTimeouts?: CtTimeouts): DatapathProvider {
  const dp = new MemoryDatapath({ ctTimeouts });
  return {
    mode: 'memory',
    preferInAuto: false,
    unavailable: () => undefined,
    create: () => dp,
    linkExists: (ifName) => dp.linkExists(ifName),
  };
}

/** The memory datapath cell: contributes its provider to the datapath selection. */
export const memoryDatapathCell = module(
  'datapath-memory',
  'In-memory datapath: maps in memory, the verdict model (unprivileged runs and tests)',
  provideInto(DatapathProvidersToken, (cfg: DatapathConfig) => memoryDatapathProvider(ctTimeoutsOf(cfg)), DatapathConfigToken),
);
