/**
 * The global conntrack maps under the BPF root: opened (or created) at the configured sizes with
 * a changed layout detected and recreated rather than misread, read as a CtStore by the shared
 * conntrack model, listed, flushed, and swept a slice at a time (garbage collection, and the
 * scrub of a deleted endpoint's addresses) without holding the event loop.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { parseAddr } from '../../lib/addr.js';
import { writeAddr } from '../addr-codec.js';
import type { CtEntry, CtKey, CtStore } from '../../datapath/conntrack.js';
import { BpfMap, type MapSpec } from '../../bpf/bpf-map.js';
import { bpfError } from '../../bpf/errors.js';
import {
  CT_MAPS, ctEntryCodec, ctKey4Codec, ctKey6Codec, ctLifetimeAt, ctMapSpec, DEFAULT_CT_MAP_SIZES, type CtMapName, type CtMapSizes,
} from './layout.js';
import { TypedMap } from '../../bpf/typed-map.js';
import { countUserDeleted, CT_STATS_MAP, CT_STATS_SPEC, readCtCounts, type CtMapCounts } from './stats.js';

/** One conntrack map, typed. */
export type CtMap = TypedMap<CtKey, CtEntry>;

/** Why a pinned map was replaced: its layout and the one wanted. */
export interface MapReplacement {
  readonly name: string;
  readonly path: string;
  readonly have: string;
  readonly want: string;
}

/** A map layout as text: `lru_hash key 14 value 56 max 524288 flags 0`. */
export function layoutText(m: { type: number; keySize: number; valueSize: number; maxEntries: number; flags?: number }): string {
  const types: Record<number, string> = { 1: 'hash', 2: 'array', 5: 'percpu_hash', 6: 'percpu_array', 9: 'lru_hash', 11: 'lpm_trie', 27: 'ringbuf' };
  return `${types[m.type] ?? `type ${m.type}`} key ${m.keySize} value ${m.valueSize} max ${m.maxEntries} flags ${m.flags ?? 0}`;
}

/**
 * Opens the map pinned at `path` when its layout is `spec`; otherwise unpins it and pins a new one
 * (its entries are lost, never read with the wrong layout), telling `onReplace` why.
 */
export function openExact(path: string, spec: MapSpec, onReplace?: (r: MapReplacement) => void): BpfMap {
  if (existsSync(path)) {
    let have: BpfMap | undefined;
    try {
      have = BpfMap.openPinned(path);
    } catch (err) {
      if ((err as { code?: string }).code !== 'ENOENT') throw err;
    }
    if (have?.matches(spec)) return have;
    if (have) {
      onReplace?.({ name: spec.name, path, have: layoutText(have.info), want: layoutText(spec) });
      have.close();
    }
  }
  return BpfMap.openOrCreate(path, spec);
}

/** The four conntrack maps and their counters (cellium_ct_stats), open. */
export class CtMaps {
  private constructor(readonly maps: Readonly<Record<CtMapName, CtMap>>, readonly stats: BpfMap) {}

  /**
   * Opens (or creates) the maps under `bpfRoot` at `sizes`; a pinned map of another layout (type,
   * key or value size, size) is replaced and reported to `onReplace`.
   */
  static open(bpfRoot: string, sizes: CtMapSizes = DEFAULT_CT_MAP_SIZES, onReplace?: (r: MapReplacement) => void): CtMaps {
    const opened: Partial<Record<CtMapName, CtMap>> = {};
    try {
      for (const { name, family } of CT_MAPS) {
        const m = openExact(join(bpfRoot, name), ctMapSpec(name, sizes), onReplace);
        opened[name] = new TypedMap(m, family === 'ipv4' ? ctKey4Codec : ctKey6Codec, ctEntryCodec);
      }
      return new CtMaps(opened as Record<CtMapName, CtMap>, openExact(join(bpfRoot, CT_STATS_MAP), CT_STATS_SPEC, onReplace));
    } catch (err) {
      for (const m of Object.values(opened)) m.close();
      throw err;
    }
  }

  /**
   * Opens the maps pinned under `bpfRoot` as they are (any size), for reading and flushing from
   * outside the agent (`cellium bpf ct`). Fails, naming the map, when one is missing or has
   * another key or value layout than this build's.
   */
  static openPinned(bpfRoot: string): CtMaps {
    const opened: Partial<Record<CtMapName, CtMap>> = {};
    try {
      for (const { name, family } of CT_MAPS) {
        const path = join(bpfRoot, name);
        const m = BpfMap.openPinned(path);
        const want = ctMapSpec(name);
        if (!m.matches({ ...want, maxEntries: m.info.maxEntries })) {
          m.close();
          throw bpfError('bpf_obj_get', 22, path, `layout ${layoutText(m.info)}, this cellium reads ${layoutText({ ...want, maxEntries: m.info.maxEntries })}: the agent recreates it at start`);
        }
        opened[name] = new TypedMap(m, family === 'ipv4' ? ctKey4Codec : ctKey6Codec, ctEntryCodec);
      }
      // the counters of an older agent's maps may be missing: a flush still counts its deletes
      return new CtMaps(opened as Record<CtMapName, CtMap>, BpfMap.openOrCreate(join(bpfRoot, CT_STATS_MAP), CT_STATS_SPEC));
    } catch (err) {
      for (const m of Object.values(opened)) m.close();
      throw err;
    }
  }

  /** The map a key belongs in. */
  mapOf(k: Pick<CtKey, 'family' | 'nexthdr'>): CtMap {
    const tcp = k.nexthdr === 6;
    if (k.family === 'ipv4') return tcp ? this.maps.cellium_ct4_global : this.maps.cellium_ct_any4_global;
    return tcp ? this.maps.cellium_ct6_global : this.maps.cellium_ct_any6_global;
  }

  /** The maps as the conntrack model's store (reads and writes the kernel's entries). */
  store(): CtStore {
    return {
      get: (k) => this.mapOf(k).get(k),
      set: (k, e) => {
        try {
          this.mapOf(k).set(k, e);
          return true;
        } catch {
          return false;
        }
      },
    };
  }

  /** Every entry of every map, with the map's name. */
  entries(): { map: CtMapName; key: CtKey; entry: CtEntry }[] {
    const out: { map: CtMapName; key: CtKey; entry: CtEntry }[] = [];
    for (const { name } of CT_MAPS) for (const [key, entry] of this.maps[name].entries()) out.push({ map: name, key, entry });
    return out;
  }

  /** Every map's created and userspace-deleted counts (cellium_ct_stats). */
  counts(): Record<CtMapName, CtMapCounts> {
    return readCtCounts(this.stats);
  }

  /** Records `n` entries deleted from `name` by userspace (so they are not taken for evictions). */
  countDeleted(name: CtMapName, n: number): void {
    countUserDeleted(this.stats, name, n);
  }

  /** Fds by map name, cellium_ct_stats too (for binding the maps to a program). */
  fds(): Record<CtMapName | typeof CT_STATS_MAP, number> {
    return { ...Object.fromEntries(CT_MAPS.map(({ name }) => [name, this.maps[name].map.fd])), [CT_STATS_MAP]: this.stats.fd } as Record<CtMapName | typeof CT_STATS_MAP, number>;
  }

  /** Kernel map ids, cellium_ct_stats too (to check which maps a loaded program uses). */
  ids(): number[] {
    return [...CT_MAPS.map(({ name }) => this.maps[name].map.info.id), this.stats.info.id];
  }

  /** Closes the fds (the pinned maps stay). */
  close(): void {
    for (const m of Object.values(this.maps)) m.close();
    this.stats.close();
  }
}

/** How a sweep works through a map. */
export interface SweepOptions {
  /** Entries per batch lookup (default 1024: one batch and its deletes stay around a millisecond). */
  readonly chunk?: number;
  /** Yield to the event loop once a slice has run this long (default 5 ms). */
  readonly sliceMs?: number;
  readonly signal?: AbortSignal;
}

/** What a sweep did. */
export interface SweepResult {
  readonly scanned: number;
  readonly deleted: number;
}

/**
 * Deletes every entry of `map` that `match` picks (given the batch's key and value buffers and the
 * entry's offsets), a batch lookup at a time, yielding to the event loop between slices of
 * `sliceMs`. Entries the datapath removed meanwhile are skipped.
 */
export async function sweepMap(
  map: BpfMap,
  match: (keys: Buffer, keyOffset: number, values: Buffer, valueOffset: number) => boolean,
  o: SweepOptions = {},
): Promise<SweepResult> {
  const chunk = o.chunk ?? 1024;
  const sliceMs = o.sliceMs ?? 5;
  const ks = map.keySize;
  const vs = map.valueBytes;
  const doomed = Buffer.alloc(ks * chunk);
  let scanned = 0;
  let deleted = 0;
  let sliceStart = performance.now();
  for (const b of map.batches(chunk)) {
    let n = 0;
    for (let i = 0; i < b.count; i++) {
      if (match(b.keys, i * ks, b.values, i * vs)) b.keys.copy(doomed, (n++) * ks, i * ks, (i + 1) * ks);
    }
    scanned += b.count;
    deleted += map.deleteKeys(doomed, n);
    if (performance.now() - sliceStart >= sliceMs) {
      await yieldToLoop();
      o.signal?.throwIfAborted();
      sliceStart = performance.now();
    }
  }
  return { scanned, deleted };
}

/** Sweeps the expired entries (lifetime < now, CLOCK_MONOTONIC seconds) of one map. */
export function sweepExpired(map: BpfMap, now: number, o?: SweepOptions): Promise<SweepResult> {
  return sweepMap(map, (_k, _ko, values, vo) => ctLifetimeAt(values, vo) < now, o);
}

/**
 * Sweeps the entries of one map whose either address is one of `ips` (a deleted endpoint's
 * addresses): its connections can never be replies to a later holder of the address. The match
 * reads the key's bytes in place (no string or object per entry: a scrub scans the whole map).
 */
export function sweepAddresses(map: BpfMap, family: 'ipv4' | 'ipv6', ips: Iterable<string>, o?: SweepOptions): Promise<SweepResult> {
  const match = addressMatch(family, ips);
  if (!match) return Promise.resolve({ scanned: 0, deleted: 0 });
  return sweepMap(map, match, o);
}

/**
 * Whether a conntrack key (daddr at its offset, saddr right after, network order) names one of
 * `ips` of `family` on either side; undefined when none of `ips` is of that family.
 */
function addressMatch(family: 'ipv4' | 'ipv6', ips: Iterable<string>): ((keys: Buffer, keyOffset: number) => boolean) | undefined {
  const width = family === 'ipv4' ? 4 : 16;
  const wanted: Buffer[] = [];
  for (const ip of ips) {
    const a = parseAddr(ip);
    if (a?.family !== family) continue;
    const full = Buffer.alloc(16);
    writeAddr(family, a.value, full, 0);
    const bytes = full.subarray(0, width);
    if (!wanted.some((w) => w.equals(bytes))) wanted.push(bytes);
  }
  if (!wanted.length) return undefined;
  if (family === 'ipv4') {
    // signed reads: small integers, which a Set compares without boxing
    const v4 = new Set(wanted.map((w) => w.readInt32BE(0)));
    return (keys, ko) => v4.has(keys.readInt32BE(ko)) || v4.has(keys.readInt32BE(ko + 4));
  }
  return (keys, ko) => {
    for (const w of wanted) {
      if (w.compare(keys, ko, ko + 16) === 0 || w.compare(keys, ko + 16, ko + 32) === 0) return true;
    }
    return false;
  };
}

/** Deletes every entry of the maps (counted in cellium_ct_stats); returns how many, by map name. */
export async function flushCtMaps(maps: CtMaps, o?: SweepOptions): Promise<Record<CtMapName, number>> {
  const out: Partial<Record<CtMapName, number>> = {};
  for (const { name } of CT_MAPS) {
    out[name] = (await sweepMap(maps.maps[name].map, () => true, o)).deleted;
    maps.countDeleted(name, out[name]);
  }
  return out as Record<CtMapName, number>;
}

