/**
 * The datapath maps as typed maps, opened (or created with the program's exact layout) at their
 * pins under the BPF root: cellium_ipcache, cellium_lxc, cellium_policy_<id>, cellium_metrics.
 * Plus the policy sync that writes only the difference, and the drop counters.
 */
import { endianness } from 'node:os';
import { join } from 'node:path';
import { IPCACHE_MAP, LXC_MAP, policyMapName } from '../datapath/map-names.js';
import { expandPolicy, policyKeyId, type PolicyKey } from '../datapath/policy-lpm.js';
import type { PolicyEntry } from '../datapath/types.js';
import { BpfMap, type MapSpec } from '../bpf/bpf-map.js';
import {
  DROP_REASONS, hostOrder, IPCACHE_MAP_SPEC, LXC_MAP_SPEC, METRICS_DIR_STRIDE, METRICS_EVENTS_LOST, METRICS_MAP, METRICS_MAP_SPEC, POLICY_MAP_SPEC, ipcacheKeyCodec, ipcacheValueCodec,
  lxcKeyCodec, lxcValueCodec, policyKeyCodec, policyValueCodec, type IPCacheValue, type LxcValue,
} from './layout.js';
import { TypedMap } from '../bpf/typed-map.js';

/** The ipcache: CIDR -> {identity, flags}. */
export type IPCacheMap = TypedMap<string, IPCacheValue>;
/** The endpoints map: IP -> local endpoint. */
export type LxcMap = TypedMap<string, LxcValue>;
/** An endpoint's policy map: LPM key -> deny flag. */
export type PolicyMap = TypedMap<PolicyKey, boolean>;

/** Path of an endpoint's policy map pin. */
export function policyMapPath(bpfRoot: string, endpointId: number): string {
  return join(bpfRoot, policyMapName(endpointId));
}

/**
 * Opens (or creates and pins) cellium_ipcache under the BPF root. With `maxEntries`, a pinned map
 * of another size is replaced by a new one of that size holding its entries; without it, any
 * pinned size is kept.
 */
export function openIPCacheMap(bpfRoot: string, maxEntries?: number): IPCacheMap {
  return new TypedMap(openSized(join(bpfRoot, IPCACHE_MAP), IPCACHE_MAP_SPEC, maxEntries), ipcacheKeyCodec, ipcacheValueCodec);
}

/** Opens (or creates and pins) cellium_lxc under the BPF root (`maxEntries` as for openIPCacheMap). */
export function openLxcMap(bpfRoot: string, maxEntries?: number): LxcMap {
  return new TypedMap(openSized(join(bpfRoot, LXC_MAP), LXC_MAP_SPEC, maxEntries), lxcKeyCodec, lxcValueCodec);
}

/** Opens (or creates and pins) an endpoint's policy map (`maxEntries` as for openIPCacheMap). */
export function openPolicyMap(bpfRoot: string, endpointId: number, maxEntries?: number): PolicyMap {
  const spec = { ...POLICY_MAP_SPEC, name: policyMapName(endpointId) };
  return new TypedMap(openSized(policyMapPath(bpfRoot, endpointId), spec, maxEntries), policyKeyCodec, policyValueCodec);
}

/**
 * The map pinned at `path` when its layout fits `spec` (any size unless `maxEntries` is given; of
 * another size, it is resized with its entries), else a new one.
 */
function openSized(path: string, spec: MapSpec, maxEntries: number | undefined): BpfMap {
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

/** Removes an endpoint's policy map pin; false when there was none. */
export function removePolicyMap(bpfRoot: string, endpointId: number): boolean {
  return BpfMap.unpin(policyMapPath(bpfRoot, endpointId));
}

/** What a policy sync wrote. */
export interface PolicySyncResult {
  readonly written: number;
  readonly deleted: number;
  readonly unchanged: number;
}

/**
 * Makes the policy map hold exactly the expansion of `entries`: reads the current keys (one batch
 * lookup), writes new and changed entries in one batch, then deletes stale keys in one batch.
 * Writes come before deletes, so no packet sees a state with less than both old and new allow.
 */
export function syncPolicyMap(map: PolicyMap, entries: readonly PolicyEntry[]): PolicySyncResult {
  const want = expandPolicy(entries);
  const have = new Map<string, [PolicyKey, boolean]>();
  for (const [k, deny] of map.entries()) have.set(policyKeyId(k), [k, deny]);
  const writes: [PolicyKey, boolean][] = [];
  let unchanged = 0;
  for (const e of want) {
    const id = policyKeyId(e.key);
    const cur = have.get(id);
    have.delete(id);
    if (cur && cur[1] === e.deny) unchanged++;
    else writes.push([e.key, e.deny]);
  }
  const stale = [...have.values()].map(([k]) => k);
  if (writes.length) map.setMany(writes);
  if (stale.length) map.deleteMany(stale);
  return { written: writes.length, deleted: stale.length, unchanged };
}

const LE = endianness() === 'LE';
const readU64 = (b: Buffer, o: number): bigint => (LE ? b.readBigUInt64LE(o) : b.readBigUInt64BE(o));

/** Packets and bytes of one cellium_metrics slot, summed over CPUs. */
export interface TrafficCounter {
  readonly direction: 'ingress' | 'egress';
  /** The drop reason; absent for forwarded packets. */
  readonly reason?: string;
  readonly packets: number;
  readonly bytes: number;
}

/** What cellium_metrics holds: drops by reason and direction, forwards by direction, monitor events lost. */
export interface TrafficCounters {
  readonly drops: TrafficCounter[];
  readonly forwarded: TrafficCounter[];
  readonly eventsLost: number;
}

/** Reads every slot of an open cellium_metrics map. */
export function readTraffic(m: BpfMap): TrafficCounters {
  const key = Buffer.alloc(4);
  const value = Buffer.alloc(m.valueBytes);
  const slot = (idx: number): { packets: number; bytes: number } => {
    hostOrder.u32.write(key, idx, 0);
    let packets = 0n;
    let bytes = 0n;
    if (m.lookup(key, value)) {
      for (let o = 0; o < value.length; o += 16) {
        packets += readU64(value, o);
        bytes += readU64(value, o + 8);
      }
    }
    return { packets: Number(packets), bytes: Number(bytes) };
  };
  const out: TrafficCounters = { drops: [], forwarded: [], eventsLost: slot(METRICS_EVENTS_LOST).packets };
  for (const [dir, direction] of [[0, 'ingress'], [1, 'egress']] as const) {
    out.forwarded.push({ direction, ...slot(dir * METRICS_DIR_STRIDE) });
    for (const [idx, reason] of Object.entries(DROP_REASONS)) out.drops.push({ direction, reason, ...slot(dir * METRICS_DIR_STRIDE + Number(idx)) });
  }
  return out;
}

/** Drop counters by reason name (both directions), summed over CPUs, from cellium_metrics under the BPF root. */
export function readDropCounters(bpfRoot: string): Record<string, { packets: number; bytes: number }> {
  const m = BpfMap.openOrCreate(join(bpfRoot, METRICS_MAP), METRICS_MAP_SPEC);
  try {
    const out: Record<string, { packets: number; bytes: number }> = {};
    for (const d of readTraffic(m).drops) {
      const cur = out[d.reason!] ?? { packets: 0, bytes: 0 };
      out[d.reason!] = { packets: cur.packets + d.packets, bytes: cur.bytes + d.bytes };
    }
    return out;
  } finally {
    m.close();
  }
}
