/**
 * The in-memory datapath (`--datapath-mode=memory`, and `auto` until a BPF datapath asks to be
 * preferred): real maps in memory, a loader that records loaded configurations, and the verdict
 * function of the shared verdict model. The datapath cell registers memoryDatapathProvider.
 */
import type { CtTimeouts } from '../../datapath/conntrack.js';
import type { DatapathProvider } from '../datapath/types.js';
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
