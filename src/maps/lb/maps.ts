/**
 * The load-balancing maps pinned under the BPF root, as the LBMapSet the writer and the verdict
 * model use: opened (or created with the program's layout; a pinned map of another layout is
 * replaced, never misread), written in batches, deletes that skip absent keys.
 */
import { join } from 'node:path';
import { BpfMap, type MapSpec } from '../../bpf/bpf-map.js';
import { TypedMap, type Codec } from '../../bpf/typed-map.js';
import { LB_MAP_NAMES, type LBMap, type LBMapSet } from '../../datapath/lb-maps.js';
import { bpfError } from '../../bpf/errors.js';
import { layoutText, openExact, type MapReplacement } from '../ct/maps.js';
import {
  affinityMatchKeyCodec, backendIdCodec, backendValueCodec, lbMapSpecs, maglevValueCodec, revNatIndexCodec, revNatValueCodec, serviceKeyCodec,
  serviceValueCodec, u8Codec,
} from './layout.js';

/** One kernel map as an LBMap. */
export class KernelLBMap<K, V> implements LBMap<K, V> {
  private readonly typed: TypedMap<K, V>;

  constructor(
    readonly map: BpfMap,
    readonly name: string,
    private readonly keyCodec: Codec<K>,
    private readonly valueCodec: Codec<V>,
  ) {
    this.typed = new TypedMap(map, keyCodec, valueCodec);
  }

  get(key: K): V | undefined {
    return this.typed.get(key);
  }

  set(entries: readonly (readonly [K, V])[]): void {
    if (entries.length === 1) this.typed.set(entries[0]![0], entries[0]![1]);
    else if (entries.length) this.typed.setMany(entries);
  }

  delete(keys: readonly K[]): void {
    if (!keys.length) return;
    const ks = this.keyCodec.size;
    const buf = Buffer.alloc(ks * keys.length);
    keys.forEach((k, i) => this.keyCodec.encode(k, buf, i * ks));
    this.map.deleteKeys(buf, keys.length);
  }

  entries(): [K, V][] {
    // values of a few bytes: one batch read; large ones (Maglev tables): key by key
    if (this.valueCodec.size > 4096) {
      const out: [K, V][] = [];
      for (const k of this.map.keys()) {
        const v = this.map.lookup(k);
        if (v) out.push([this.keyCodec.decode(k, 0), this.valueCodec.decode(v, 0)]);
      }
      return out;
    }
    return this.typed.entries();
  }
}

/** The kernel LB maps, open. */
export interface KernelLBMaps extends LBMapSet {
  /** Every map with its pin path (the LRU affinity maps too, which only the datapath writes). */
  readonly pinned: readonly { readonly name: string; readonly path: string; readonly map: BpfMap }[];
  /** Closes the fds (the pins stay). */
  close(): void;
}

/**
 * Opens (or creates and pins) the LB maps under `bpfRoot` with `max` entries and Maglev tables of
 * `maglevSize` slots; a pinned map of another layout or size is replaced and reported.
 */
export function openLBMaps(bpfRoot: string, max: number, maglevSize: number, onReplace?: (r: MapReplacement) => void): KernelLBMaps {
  const specs = lbMapSpecs(max, maglevSize);
  const opened: { name: string; path: string; map: BpfMap }[] = [];
  const open = (spec: MapSpec): BpfMap => {
    const path = join(bpfRoot, spec.name);
    const map = openExact(path, spec, onReplace);
    opened.push({ name: spec.name, path, map });
    return map;
  };
  try {
    const set = {
      services4: new KernelLBMap(open(specs.services4), LB_MAP_NAMES.services4, serviceKeyCodec(4), serviceValueCodec),
      services6: new KernelLBMap(open(specs.services6), LB_MAP_NAMES.services6, serviceKeyCodec(6), serviceValueCodec),
      backends4: new KernelLBMap(open(specs.backends4), LB_MAP_NAMES.backends4, backendIdCodec, backendValueCodec(4)),
      backends6: new KernelLBMap(open(specs.backends6), LB_MAP_NAMES.backends6, backendIdCodec, backendValueCodec(6)),
      revNat4: new KernelLBMap(open(specs.revNat4), LB_MAP_NAMES.revNat4, revNatIndexCodec, revNatValueCodec(4)),
      revNat6: new KernelLBMap(open(specs.revNat6), LB_MAP_NAMES.revNat6, revNatIndexCodec, revNatValueCodec(6)),
      maglev4: new KernelLBMap(open(specs.maglev4), LB_MAP_NAMES.maglev4, revNatIndexCodec, maglevValueCodec(maglevSize)),
      maglev6: new KernelLBMap(open(specs.maglev6), LB_MAP_NAMES.maglev6, revNatIndexCodec, maglevValueCodec(maglevSize)),
      affinityMatch: new KernelLBMap(open(specs.affinityMatch), LB_MAP_NAMES.affinityMatch, affinityMatchKeyCodec, u8Codec),
    };
    open(specs.affinity4);
    open(specs.affinity6);
    return { ...set, pinned: opened, close: () => opened.forEach((o) => o.map.close()) };
  } catch (err) {
    for (const o of opened) o.map.close();
    throw err;
  }
}

/**
 * Opens the LB maps pinned under `bpfRoot` as they are (any size), for reading from outside the
 * agent (`cellium bpf lb list`). Fails, naming the map, when one is missing or has another layout.
 */
export function openPinnedLBMaps(bpfRoot: string): KernelLBMaps {
  const opened: { name: string; path: string; map: BpfMap }[] = [];
  const open = (spec: MapSpec, anyValueSize = false): BpfMap => {
    const path = join(bpfRoot, spec.name);
    const map = BpfMap.openPinned(path);
    opened.push({ name: spec.name, path, map });
    const want = { ...spec, maxEntries: map.info.maxEntries, ...(anyValueSize ? { valueSize: map.info.valueSize } : {}) };
    if (!map.matches(want)) throw bpfError('bpf_obj_get', 22, path, `layout ${layoutText(map.info)}, this cellium reads ${layoutText(want)}: the agent recreates it at start`);
    return map;
  };
  try {
    const specs = lbMapSpecs(1, 1);
    const s4 = open(specs.services4);
    const s6 = open(specs.services6);
    const b4 = open(specs.backends4);
    const b6 = open(specs.backends6);
    const r4 = open(specs.revNat4);
    const r6 = open(specs.revNat6);
    const m4 = open(specs.maglev4, true);
    const m6 = open(specs.maglev6, true);
    const am = open(specs.affinityMatch);
    return {
      services4: new KernelLBMap(s4, LB_MAP_NAMES.services4, serviceKeyCodec(4), serviceValueCodec),
      services6: new KernelLBMap(s6, LB_MAP_NAMES.services6, serviceKeyCodec(6), serviceValueCodec),
      backends4: new KernelLBMap(b4, LB_MAP_NAMES.backends4, backendIdCodec, backendValueCodec(4)),
      backends6: new KernelLBMap(b6, LB_MAP_NAMES.backends6, backendIdCodec, backendValueCodec(6)),
      revNat4: new KernelLBMap(r4, LB_MAP_NAMES.revNat4, revNatIndexCodec, revNatValueCodec(4)),
      revNat6: new KernelLBMap(r6, LB_MAP_NAMES.revNat6, revNatIndexCodec, revNatValueCodec(6)),
      maglev4: new KernelLBMap(m4, LB_MAP_NAMES.maglev4, revNatIndexCodec, maglevValueCodec(m4.info.valueSize / 4)),
      maglev6: new KernelLBMap(m6, LB_MAP_NAMES.maglev6, revNatIndexCodec, maglevValueCodec(m6.info.valueSize / 4)),
      affinityMatch: new KernelLBMap(am, LB_MAP_NAMES.affinityMatch, affinityMatchKeyCodec, u8Codec),
      pinned: opened,
      close: () => opened.forEach((o) => o.map.close()),
    };
  } catch (err) {
    for (const o of opened) o.map.close();
    throw err;
  }
}
