/** Opening a pinned map of Cellium's with the layout it must have (shared by the ipcache, lxc and policy maps). */
import { BpfMap, type MapSpec } from '../bpf/bpf-map.js';

/**
 * The map pinned at `path` when its layout fits `spec` (any size unless `maxEntries` is given; of
 * another size, it is resized with its entries), else a new one.
 */
export function openSized(path: string, spec: MapSpec, maxEntries: number | undefined): BpfMap {
  if (maxEntries !== undefined) return BpfMap.openResized(path, { ...spec, maxEntries });
  let pinned: BpfMap | undefined;
  try {
    pinned = BpfMap.openPinned(path);
  } catch (err) {
    if ((err as { code?: string }).code !== 'ENOENT') throw err;
  }
  if (pinned?.matches({ ...spec, maxEntries: pinned.info.maxEntries })) return pinned;
  pinned?.close();
  return BpfMap.openOrCreate(path, spec);
}
