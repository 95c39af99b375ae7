/**
 * cellium_ct_stats (bpf/lib/maps.h): per conntrack map, the entries the datapath created (keys
 * that were not there) and the entries userspace deleted (garbage collection, scrubs, flushes).
 * The kernel's LRU evicts entries of a full table without telling anyone; with these two counts
 * and a scan's occupancy the agent counts what it evicted (see ct-pressure.ts).
 */
import { endianness } from 'node:os';
import { BpfMap, MapType, type MapSpec } from '../../bpf/bpf-map.js';
import { CT_MAPS, type CtMapName } from './layout.js';

/** The map's name. */
export const CT_STATS_MAP = 'cellium_ct_stats';

/** Slots per conntrack map (CT_STATS_SLOTS) and their meaning (CT_STATS_CREATED, CT_STATS_USER_DELETED). */
const SLOTS = 2;
const CREATED = 0;
const USER_DELETED = 1;

/** cellium_ct_stats: a per-CPU array of u64, SLOTS per conntrack map in CT_MAPS order. */
export const CT_STATS_SPEC: MapSpec = { name: CT_STATS_MAP, type: MapType.PERCPU_ARRAY, keySize: 4, valueSize: 8, maxEntries: SLOTS * CT_MAPS.length };

/** One conntrack map's counts (summed over CPUs; they only grow, until the stats map is recreated). */
export interface CtMapCounts {
  /** Entries the datapath added (new keys). */
  readonly created: number;
  /** Entries userspace deleted. */
  readonly userDeleted: number;
}

const LE = endianness() === 'LE';

function slotKey(name: CtMapName, slot: number): Buffer {
  const key = Buffer.alloc(4);
  const idx = CT_MAPS.findIndex((m) => m.name === name) * SLOTS + slot;
  if (LE) key.writeUInt32LE(idx);
  else key.writeUInt32BE(idx);
  return key;
}

function sum(value: Buffer): bigint {
  let n = 0n;
  for (let o = 0; o < value.length; o += 8) n += LE ? value.readBigUInt64LE(o) : value.readBigUInt64BE(o);
  return n;
}

/** Every conntrack map's counts. */
export function readCtCounts(stats: BpfMap): Record<CtMapName, CtMapCounts> {
  const value = Buffer.alloc(stats.valueBytes);
  const read = (name: CtMapName, slot: number): number => (stats.lookup(slotKey(name, slot), value) ? Number(sum(value)) : 0);
  return Object.fromEntries(CT_MAPS.map(({ name }) => [name, { created: read(name, CREATED), userDeleted: read(name, USER_DELETED) }])) as Record<CtMapName, CtMapCounts>;
}

/**
 * Adds `n` to a map's userspace-deleted count (on the first CPU's slot; the datapath never writes
 * this slot, and the agent's deletes run one at a time).
 */
export function countUserDeleted(stats: BpfMap, name: CtMapName, n: number): void {
  if (n <= 0) return;
  const key = slotKey(name, USER_DELETED);
  const value = stats.lookup(key) ?? Buffer.alloc(stats.valueBytes);
  const first = LE ? value.readBigUInt64LE(0) : value.readBigUInt64BE(0);
  if (LE) value.writeBigUInt64LE(first + BigInt(n), 0);
  else value.writeBigUInt64BE(first + BigInt(n), 0);
  stats.update(key, value);
}
