/** The ipcache (cellium_ipcache) opened at its pin under the BPF root, typed. */
import { join } from 'node:path';
import { IPCACHE_MAP } from '../../datapath/map-names.js';
import { TypedMap } from '../../bpf/typed-map.js';
import { openSized } from '../open.js';
import { IPCACHE_MAP_SPEC, ipcacheKeyCodec, ipcacheValueCodec, type IPCacheValue } from './layout.js';

/** The ipcache: CIDR -> {identity, flags}. */
export type IPCacheMap = TypedMap<string, IPCacheValue>;

/**
 * Opens (or creates and pins) cellium_ipcache under the BPF root. With `maxEntries`, a pinned map
 * of another size is replaced by a new one of that size holding its entries; without it, any
 * pinned size is kept.
 */
export function openIPCacheMap(bpfRoot: string, maxEntries?: number): IPCacheMap {
  return new TypedMap(openSized(join(bpfRoot, IPCACHE_MAP), IPCACHE_MAP_SPEC, maxEntries), ipcacheKeyCodec, ipcacheValueCodec);
}
