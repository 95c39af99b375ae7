/** The endpoints map (cellium_lxc) opened at its pin under the BPF root, typed. */
import { join } from 'node:path';
import { LXC_MAP } from '../../datapath/map-names.js';
import { TypedMap } from '../../bpf/typed-map.js';
import { openSized } from '../open.js';
import { LXC_MAP_SPEC, lxcKeyCodec, lxcValueCodec, type LxcValue } from './layout.js';

/** The endpoints map: IP -> local endpoint. */
export type LxcMap = TypedMap<string, LxcValue>;
/** Opens (or creates and pins) cellium_lxc under the BPF root (`maxEntries` as for openIPCacheMap). */
export function openLxcMap(bpfRoot: string, maxEntries?: number): LxcMap {
  return new TypedMap(openSized(join(bpfRoot, LXC_MAP), LXC_MAP_SPEC, maxEntries), lxcKeyCodec, lxcValueCodec);
}
