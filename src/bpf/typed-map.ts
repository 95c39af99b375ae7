/**
 * Typed maps: a BpfMap plus a codec for its key and one for its value, so no caller builds
 * Buffers by hand. Single operations reuse scratch buffers; setMany/deleteMany use the batch
 * commands.
 */
import { BpfMap, UpdateFlags } from './bpf-map.js';

/** Batches up to this many bytes of keys (or of values) are encoded into a buffer the map keeps. */
const BATCH_SCRATCH_MAX = 64 * 1024;

/** Encodes and decodes one C struct of a fixed size. */
export interface Codec<T> {
  readonly size: number;
  encode(value: T, buf: Buffer, offset: number): void;
  decode(buf: Buffer, offset: number): T;
}

/** A map with typed keys and values. */
export class TypedMap<K, V> {
  private readonly k: Buffer;
  private readonly v: Buffer;
  /** setMany's key and value buffers, reused (see batchBuffer). */
  private readonly scratch = { keys: Buffer.alloc(0), values: Buffer.alloc(0) };

  /** Wraps `map`; the codecs' sizes must equal the map's key and value sizes. */
  constructor(
    /** The underlying map. */
    readonly map: BpfMap,
    private readonly keyCodec: Codec<K>,
    private readonly valueCodec: Codec<V>,
  ) {
    if (keyCodec.size !== map.info.keySize || valueCodec.size !== map.valueBytes) {
      throw new Error(`codec sizes ${keyCodec.size}/${valueCodec.size} do not fit map ${map.info.name} (${map.info.keySize}/${map.valueBytes})`);
    }
    this.k = Buffer.alloc(keyCodec.size);
    this.v = Buffer.alloc(valueCodec.size);
  }

  private encodeKey(key: K): Buffer {
    this.k.fill(0);
    this.keyCodec.encode(key, this.k, 0);
    return this.k;
  }

  /** The value of `key`, or undefined. */
  get(key: K): V | undefined {
    const out = this.map.lookup(this.encodeKey(key), this.v);
    return out && this.valueCodec.decode(out, 0);
  }

  /** Writes one entry (flags: UpdateFlags). */
  set(key: K, value: V, flags: number = UpdateFlags.ANY): void {
    this.v.fill(0);
    this.valueCodec.encode(value, this.v, 0);
    this.map.update(this.encodeKey(key), this.v, flags);
  }

  /** Deletes one entry; false when absent. */
  delete(key: K): boolean {
    return this.map.delete(this.encodeKey(key));
  }

  /** Every entry (batch lookup). */
  entries(): [K, V][] {
    const all = this.map.lookupAll();
    const out: [K, V][] = [];
    for (let i = 0; i < all.count; i++) {
      out.push([this.keyCodec.decode(all.keys, i * this.keyCodec.size), this.valueCodec.decode(all.values, i * this.valueCodec.size)]);
    }
    return out;
  }

  /** Writes many entries in one batch; returns the count written. */
  setMany(entries: readonly (readonly [K, V])[], flags: number = UpdateFlags.ANY): number {
    const ks = this.keyCodec.size;
    const vs = this.valueCodec.size;
    const n = entries.length;
    const keys = this.batchBuffer('keys', ks * n);
    const values = this.batchBuffer('values', vs * n);
    for (let i = 0; i < n; i++) {
      const e = entries[i]!;
      this.keyCodec.encode(e[0], keys, i * ks);
      this.valueCodec.encode(e[1], values, i * vs);
    }
    return this.map.updateBatch(keys, values, n, flags);
  }

  /**
   * A buffer for a batch whose first `bytes` are zeroed: up to BATCH_SCRATCH_MAX bytes it is the
   * scratch buffer this map keeps per role (possibly longer: the batch commands take the count
   * and read only that much), so the batches of a busy writer allocate nothing; they are
   * synchronous, so the kernel is done with it when they return.
   */
  private batchBuffer(role: 'keys' | 'values', bytes: number): Buffer {
    if (bytes > BATCH_SCRATCH_MAX) return Buffer.alloc(bytes);
    let b = this.scratch[role];
    if (b.length < bytes) this.scratch[role] = b = Buffer.alloc(Math.min(BATCH_SCRATCH_MAX, Math.max(bytes, 2 * b.length, 256)));
    else b.fill(0, 0, bytes);
    return b;
  }

  /** Deletes many keys in one batch (all must exist); returns the count deleted. */
  deleteMany(keys: readonly K[]): number {
    const ks = this.keyCodec.size;
    const buf = Buffer.alloc(ks * keys.length);
    keys.forEach((k, i) => this.keyCodec.encode(k, buf, i * ks));
    return this.map.deleteBatch(buf, keys.length);
  }

  /** Closes the underlying map. */
  close(): void {
    this.map.close();
  }
}
