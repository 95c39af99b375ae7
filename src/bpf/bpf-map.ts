/**
 * A BPF map by file descriptor, with keys and values as Buffers: create, open pinned, pin,
 * unpin, lookup, update (with flags), delete, key iteration and the batch commands. Sizes are
 * checked here (the addon trusts them). Per-CPU maps take and return values of
 * roundUp(valueSize, 8) * possible CPUs bytes.
 */
import { existsSync, renameSync, rmSync } from 'node:fs';
import { bpfError, sys, toBpfError } from './errors.js';
import { loadAddon, type BpfAddon, type RawMapInfo } from './native.js';

/** BPF map types used by Cellium (linux/bpf.h enum bpf_map_type). */
export const MapType = {
  HASH: 1, ARRAY: 2, PERCPU_HASH: 5, PERCPU_ARRAY: 6, LRU_HASH: 9, LPM_TRIE: 11, ARRAY_OF_MAPS: 12, RINGBUF: 27,
} as const;

/** Map creation flags. */
export const MapFlags = { NO_PREALLOC: 1 } as const;

/** Update flags (BPF_ANY, BPF_NOEXIST, BPF_EXIST). */
export const UpdateFlags = { ANY: 0, NOEXIST: 1, EXIST: 2 } as const;

/** What a map is made of (a C map definition). */
export interface MapSpec {
  readonly name: string;
  readonly type: number;
  readonly keySize: number;
  readonly valueSize: number;
  readonly maxEntries: number;
  readonly flags?: number;
  /** For a map of maps: the spec of its inner maps (a map of that shape is made to create it). */
  readonly inner?: MapSpec;
}

const PERCPU = new Set<number>([MapType.PERCPU_HASH, MapType.PERCPU_ARRAY]);

/** Whether a batch command failed because the map (or kernel) has no batch support. */
export function isBatchUnsupported(err: unknown): boolean {
  const code = (err as { code?: string }).code;
  return code === 'EINVAL' || code === 'ENOTSUPP' || code === 'EOPNOTSUPP';
}

/** A map open in this process. close() releases the fd (pinned maps live on). */
export class BpfMap {
  /** Bytes of a value as lookup/update take it (per-CPU maps: one slot per possible CPU). */
  readonly valueBytes: number;
  /** Bytes of a key. */
  readonly keySize: number;
  private closed = false;

  private constructor(
    private readonly addon: BpfAddon,
    /** The map's file descriptor. */
    readonly fd: number,
    /** Kernel info: type, id, sizes, flags, name. */
    readonly info: RawMapInfo,
  ) {
    this.keySize = info.keySize;
    this.valueBytes = PERCPU.has(info.type) ? Math.ceil(info.valueSize / 8) * 8 * addon.numPossibleCpus() : info.valueSize;
  }

  /** Creates a map (not pinned). */
  static create(spec: MapSpec): BpfMap {
    const a = loadAddon();
    const inner = spec.inner ? BpfMap.create(spec.inner) : undefined;
    try {
      const fd = sys(() => a.mapCreate(spec.type, spec.name, spec.keySize, spec.valueSize, spec.maxEntries, spec.flags ?? 0, inner?.fd ?? -1));
      return BpfMap.fromFd(fd);
    } finally {
      inner?.close();
    }
  }

  /** Opens the map pinned at `path`. */
  static openPinned(path: string): BpfMap {
    const a = loadAddon();
    return BpfMap.fromFd(sys(() => a.objGet(path)));
  }

  /** Opens the map pinned at `path` when its layout equals `spec`; otherwise (or when absent) creates and pins a new one there. */
  static openOrCreate(path: string, spec: MapSpec): BpfMap {
    // a new endpoint's map is not pinned yet: a stat spares the failing bpf_obj_get and its error
    const pinned = existsSync(path);
    let m: BpfMap | undefined;
    try {
      if (pinned) m = BpfMap.openPinned(path);
    } catch (err) {
      if ((err as { code?: string }).code !== 'ENOENT') throw err;
    }
    if (m && m.matches(spec)) return m;
    m?.close();
    if (pinned) rmSync(path, { force: true });
    const created = BpfMap.create(spec);
    try {
      created.pin(path);
    } catch (err) {
      created.close();
      throw err;
    }
    return created;
  }

  /**
   * Like openOrCreate, but a pinned map that differs from `spec` only in its size is replaced by a
   * map of the new size that holds the old one's entries (pinned beside it, then renamed over it),
   * so a size changed between two agent runs never hands the programs an empty map. Throws, leaving
   * the old map pinned, when its entries do not fit in the new size.
   */
  static openResized(path: string, spec: MapSpec): BpfMap {
    let old: BpfMap | undefined;
    try {
      if (existsSync(path)) old = BpfMap.openPinned(path);
    } catch (err) {
      if ((err as { code?: string }).code !== 'ENOENT') throw err;
    }
    if (old?.matches(spec)) return old;
    if (!old || !old.matches({ ...spec, maxEntries: old.info.maxEntries })) {
      old?.close(); // another layout (or none): a new map, as openOrCreate makes it
      return BpfMap.openOrCreate(path, spec);
    }
    try {
      const { count, keys, values } = old.lookupAll();
      if (count > spec.maxEntries) {
        throw bpfError('bpf_map_create', 7, path, `the map holds ${count} entries and cannot shrink to ${spec.maxEntries}: give a size of at least ${count} (or remove entries first)`);
      }
      const created = BpfMap.create(spec);
      const pending = `${path}_resizing`; // bpffs refuses names with a dot
      try {
        const ks = old.keySize;
        const vs = old.valueBytes;
        for (let i = 0; i < count; i++) created.update(keys.subarray(i * ks, (i + 1) * ks), values.subarray(i * vs, (i + 1) * vs));
        BpfMap.unpin(pending);
        created.pin(pending);
        renameSync(pending, path);
      } catch (err) {
        BpfMap.unpin(pending);
        created.close();
        throw err;
      }
      return created;
    } finally {
      old.close();
    }
  }

  /** Wraps an fd this process owns (close() will close it). */
  static fromFd(fd: number): BpfMap {
    const a = loadAddon();
    try {
      return new BpfMap(a, fd, sys(() => a.mapInfo(fd)));
    } catch (err) {
      a.close(fd);
      throw err;
    }
  }

  /** Whether the map has exactly this layout (type, sizes, max entries, flags). */
  matches(spec: MapSpec): boolean {
    const i = this.info;
    return i.type === spec.type && i.keySize === spec.keySize && i.valueSize === spec.valueSize && i.maxEntries === spec.maxEntries && i.flags === (spec.flags ?? 0);
  }

  /** Pins the map at `path` (on a bpffs). */
  pin(path: string): void {
    sys(() => this.addon.objPin(this.fd, path));
  }

  /** Removes the pin at `path` (the map lives while other holders remain); false when nothing was there. */
  static unpin(path: string): boolean {
    try {
      rmSync(path);
      return true;
    } catch (err) {
      if ((err as { code?: string }).code === 'ENOENT') return false;
      throw err;
    }
  }

  private key(k: Buffer): void {
    if (k.length !== this.keySize) throw bpfError('bpf_map_key', 22, '', `key of ${k.length} bytes for a map with ${this.keySize}-byte keys`);
  }

  private value(v: Buffer): void {
    if (v.length !== this.valueBytes) throw bpfError('bpf_map_value', 22, '', `value of ${v.length} bytes for a map with ${this.valueBytes}-byte values`);
  }

  // The single-entry operations inline their error conversion (no closure per call: they are hot).

  /** Looks a key up into `out` (a new Buffer by default): the value, or undefined when absent. */
  lookup(key: Buffer, out: Buffer = Buffer.allocUnsafe(this.valueBytes)): Buffer | undefined {
    this.key(key);
    this.value(out);
    try {
      return this.addon.mapLookup(this.fd, key, out) ? out : undefined;
    } catch (err) {
      throw toBpfError(err);
    }
  }

  /** Writes an entry; flags: UpdateFlags. */
  update(key: Buffer, value: Buffer, flags: number = UpdateFlags.ANY): void {
    this.key(key);
    this.value(value);
    try {
      this.addon.mapUpdate(this.fd, key, value, flags);
    } catch (err) {
      throw toBpfError(err);
    }
  }

  /** Deletes an entry; false when it was absent. */
  delete(key: Buffer): boolean {
    this.key(key);
    try {
      return this.addon.mapDelete(this.fd, key);
    } catch (err) {
      throw toBpfError(err);
    }
  }

  /**
   * update() on a libuv worker thread: for a map of maps, whose writes wait in the kernel for an
   * RCU grace period after the slot changed (milliseconds the event loop must not block for).
   */
  async updateAsync(key: Buffer, value: Buffer, flags: number = UpdateFlags.ANY): Promise<void> {
    this.key(key);
    this.value(value);
    try {
      await this.addon.mapUpdateAsync(this.fd, key, value, flags);
    } catch (err) {
      throw toBpfError(err);
    }
  }

  /** delete() on a libuv worker thread (see updateAsync); false when the key was absent. */
  async deleteAsync(key: Buffer): Promise<boolean> {
    this.key(key);
    try {
      return await this.addon.mapDeleteAsync(this.fd, key);
    } catch (err) {
      throw toBpfError(err);
    }
  }

  /** Iterates the keys (BPF_MAP_GET_NEXT_KEY); each yielded Buffer is a fresh copy. */
  *keys(): Generator<Buffer> {
    let prev: Buffer | null = null;
    for (;;) {
      const next = Buffer.alloc(this.info.keySize);
      if (!sys(() => this.addon.mapNextKey(this.fd, prev, next))) return;
      yield next;
      prev = next;
    }
  }

  /**
   * Every entry (BPF_MAP_LOOKUP_BATCH): the kernel writes straight into one pair of buffers, as a C
   * caller would, starting with room for `initial` entries (capped at the map's size) and doubling
   * when full, so a caller that knows the count gets it in one syscall and no copy. Maps without
   * batch support are read key by key. A caller that reads the same map again and again passes
   * `into` (buffers of a previous result or its own): the kernel writes into them while they have
   * room, so a steady reader allocates nothing; the result is then views of those buffers.
   */
  lookupAll(initial = 4096, into?: { keys: Buffer; values: Buffer }): { count: number; keys: Buffer; values: Buffer } {
    const ks = this.keySize;
    const vs = this.valueBytes;
    const reusable = into ? Math.min(Math.floor(into.keys.length / ks), Math.floor(into.values.length / vs)) : 0;
    let cap = reusable > 0 ? reusable : Math.max(1, Math.min(initial, this.info.maxEntries || initial));
    let keys = reusable > 0 ? into!.keys : Buffer.allocUnsafe(ks * cap);
    let values = reusable > 0 ? into!.values : Buffer.allocUnsafe(vs * cap);
    const outBatch = Buffer.alloc(Math.max(ks, 8));
    const inBatch = Buffer.alloc(outBatch.length);
    const grow = (): void => {
      cap *= 2;
      keys = Buffer.concat([keys], ks * cap);
      values = Buffer.concat([values], vs * cap);
    };
    let total = 0;
    let first = true;
    try {
      for (;;) {
        if (total === cap) grow();
        let r: [number, boolean];
        try {
          r = sys(() => this.addon.mapLookupBatch(this.fd, first ? null : inBatch, outBatch, keys.subarray(total * ks), values.subarray(total * vs), cap - total));
        } catch (err) {
          // a bucket larger than the room left: nothing was read, the cursor did not move
          if ((err as { code?: string }).code !== 'ENOSPC') throw err;
          grow();
          continue;
        }
        first = false;
        total += r[0];
        if (!r[1]) break;
        outBatch.copy(inBatch);
      }
    } catch (err) {
      if (!isBatchUnsupported(err)) throw err;
      return this.lookupAllByKey();
    }
    return { count: total, keys: keys.subarray(0, total * ks), values: values.subarray(0, total * vs) };
  }

  /**
   * The entries in batches of up to `chunk` (BPF_MAP_LOOKUP_BATCH), for callers that work through a
   * large map a piece at a time (garbage collection between event-loop turns). Each batch reuses
   * the same two buffers: read them before asking for the next. A map changing meanwhile may
   * yield an entry twice or miss one added behind the cursor (hash maps iterate by bucket).
   * Throws EINVAL/ENOTSUPP on maps without batch support (see isBatchUnsupported).
   */
  *batches(chunk = 4096): Generator<{ count: number; keys: Buffer; values: Buffer }> {
    const keys = Buffer.alloc(this.keySize * chunk);
    const values = Buffer.alloc(this.valueBytes * chunk);
    const outBatch = Buffer.alloc(Math.max(this.keySize, 8));
    const inBatch = Buffer.alloc(outBatch.length);
    let first = true;
    for (;;) {
      const [n, more] = sys(() => this.addon.mapLookupBatch(this.fd, first ? null : inBatch, outBatch, keys, values, chunk));
      first = false;
      if (n > 0) yield { count: n, keys, values };
      if (!more) return;
      outBatch.copy(inBatch);
    }
  }

  private lookupAllByKey(): { count: number; keys: Buffer; values: Buffer } {
    const keyParts: Buffer[] = [];
    const valueParts: Buffer[] = [];
    for (const k of this.keys()) {
      const v = this.lookup(k);
      if (!v) continue;
      keyParts.push(k);
      valueParts.push(v);
    }
    return { count: keyParts.length, keys: Buffer.concat(keyParts), values: Buffer.concat(valueParts) };
  }

  /** Writes `count` entries from concatenated keys and values in one BPF_MAP_UPDATE_BATCH; returns the count written. */
  updateBatch(keys: Buffer, values: Buffer, count: number, flags: number = UpdateFlags.ANY): number {
    if (count === 0) return 0;
    this.checkBatch(keys, this.info.keySize, count, 'keys');
    this.checkBatch(values, this.valueBytes, count, 'values');
    return sys(() => this.addon.mapUpdateBatch(this.fd, keys, values, count, flags));
  }

  /**
   * updateBatch() on a libuv worker thread: for a map of maps, whose batch write waits in the
   * kernel for one RCU grace period after every slot changed.
   */
  async updateBatchAsync(keys: Buffer, values: Buffer, count: number, flags: number = UpdateFlags.ANY): Promise<void> {
    if (count === 0) return;
    this.checkBatch(keys, this.info.keySize, count, 'keys');
    this.checkBatch(values, this.valueBytes, count, 'values');
    try {
      await this.addon.mapUpdateBatchAsync(this.fd, keys, values, count, flags);
    } catch (err) {
      throw toBpfError(err);
    }
  }

  /** Deletes `count` concatenated keys in one BPF_MAP_DELETE_BATCH (fails with ENOENT at the first absent key); returns the count deleted. */
  deleteBatch(keys: Buffer, count: number): number {
    if (count === 0) return 0;
    this.checkBatch(keys, this.info.keySize, count, 'keys');
    return sys(() => this.addon.mapDeleteBatch(this.fd, keys, count));
  }

  /**
   * Deletes the first `count` concatenated keys, skipping keys that are absent (gone since they
   * were read); returns how many were deleted.
   */
  deleteKeys(keys: Buffer, count: number): number {
    if (count === 0) return 0;
    this.checkBatch(keys, this.info.keySize, count, 'keys');
    return sys(() => this.addon.mapDeleteKeys(this.fd, keys, count));
  }

  private checkBatch(buf: Buffer, size: number, count: number, what: string): void {
    if (buf.length < size * count) throw bpfError('bpf_map_batch', 22, '', `${what}: ${buf.length} bytes for ${count} entries of ${size}`);
  }

  /** Closes the fd (idempotent). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.addon.close(this.fd);
  }
}
