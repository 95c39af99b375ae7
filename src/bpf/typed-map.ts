/**
 * Typed maps: a BpfMap plus a codec for its key and one for its value, so no caller builds
 * Buffers by hand. Single operations reuse scratch buffers; setMany/deleteMany use the batch
 * commands.
 */
import { BpfMap, UpdateFlags } from './bpf-map.js';

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
    const keys = Buffer.alloc(ks * entries.length);
    const values = Buffer.alloc(vs * entries.length);
    entries.forEach(([k, v], i) => {
      this.keyCodec.encode(k, keys, i * ks);
      this.valueCodec.encode(v, values, i * vs);
    });
    return this.map.updateBatch(keys, values, entries.length, flags);
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
