/**
 * Backend IDs (the backends map's keys), one per backend address (IP, port, protocol), shared by
 * every frontend that has the backend and counted by their references; an ID is freed when its
 * last frontend lets go. IDs found in the kernel's backends map after a restart are kept, so the
 * conntrack entries that name them still find their backend.
 *
 * Addresses are known by their formatL3n4 text (the "key"). Most backends belong to one frontend,
 * so an ID's referrers are kept as that one frontend's key, and only as a Set once a second
 * frontend shares the backend (a Set per backend was a good part of the LB reconciler's garbage).
 * IDs are dense from 1, so what is kept per ID lives in arrays indexed by it.
 */
import { formatL3n4 } from './addr.js';
import { backendIdsExhausted } from './errors.js';
import type { L3n4Addr } from './types.js';

/** An ID's referrers: none (restored, not yet taken back), one frontend's key, or several. */
type Refs = undefined | string | Set<string>;

/** Stands for "no flags written yet" (flags are a byte: 0..255). */
const NO_FLAGS = 256;

/**
 * Allocates and counts backend IDs, and remembers the flags each ID's backends-map entry was last
 * written with. Per ID the state lives in arrays indexed by the ID (no object per backend).
 */
export class BackendIds {
  private readonly byKey = new Map<string, number>();
  /** Referrers by ID. */
  private readonly refs: Refs[] = [];
  /** By ID: 0 free, else 1 + the flags written (NO_FLAGS + 1: none yet). */
  private state: Uint16Array;
  private next = 1;

  constructor(private readonly max: number) {
    this.state = new Uint16Array(Math.min(max, 65536) + 1);
  }

  /** Takes over an ID found in the kernel (restore) whose entry has `flags`. */
  restore(addr: L3n4Addr, id: number, flags: number): void {
    this.byKey.set(formatL3n4(addr), id);
    this.refs[id] = undefined;
    this.mark(id, flags & 255);
    if (id >= this.next) this.next = id + 1;
  }

  /** The ID of an address, if it has one. */
  idOf(addr: L3n4Addr): number | undefined {
    return this.byKey.get(formatL3n4(addr));
  }

  /** {@link idOf} by the address's formatL3n4 text. */
  idOfKey(key: string): number | undefined {
    return this.byKey.get(key);
  }

  /** The flags the ID's backends-map entry was last written with (undefined: not written, or a free ID). */
  flagsOf(id: number): number | undefined {
    const s = id < this.state.length ? this.state[id]! : 0;
    return s === 0 || s === NO_FLAGS + 1 ? undefined : s - 1;
  }

  /** Records the flags (a byte) the entry of the taken ID `id` was written with. */
  setFlags(id: number, flags: number): void {
    if (id < this.state.length && this.state[id] !== 0) this.state[id] = (flags & 255) + 1;
  }

  /** The ID of an address for frontend `fe` (allocated when new), counting the reference. */
  acquire(addr: L3n4Addr, fe: string): number {
    return this.acquireKey(formatL3n4(addr), fe);
  }

  /** {@link acquire} by the address's formatL3n4 text (a caller that has it already). */
  acquireKey(key: string, fe: string): number {
    let id = this.byKey.get(key);
    if (id === undefined) {
      id = this.allocate();
      this.byKey.set(key, id);
      this.refs[id] = fe;
      return id;
    }
    const r = this.refs[id];
    if (r === undefined) this.refs[id] = fe;
    else if (typeof r === 'string') {
      if (r !== fe) this.refs[id] = new Set([r, fe]);
    } else r.add(fe);
    return id;
  }

  /** Drops frontend `fe`'s reference; true when the ID is now unreferenced (and freed). */
  release(addr: L3n4Addr, fe: string): boolean {
    return this.releaseKey(formatL3n4(addr), fe);
  }

  /** {@link release} by the address's formatL3n4 text. */
  releaseKey(key: string, fe: string): boolean {
    const id = this.byKey.get(key);
    if (id === undefined) return false;
    const r = this.refs[id];
    if (typeof r === 'string') {
      if (r !== fe) return false;
    } else if (r !== undefined) {
      r.delete(fe);
      if (r.size > 1) return false;
      if (r.size === 1) {
        this.refs[id] = r.values().next().value;
        return false;
      }
    }
    this.free(key, id);
    return true;
  }

  /** IDs no frontend references (restored ones nobody took back), with their addresses. */
  unreferenced(): [string, number][] {
    const out: [string, number][] = [];
    for (const [key, id] of this.byKey) if (this.refs[id] === undefined) out.push([key, id]);
    return out;
  }

  /** Forgets an unreferenced ID (after its entry was deleted). */
  forget(key: string): void {
    const id = this.byKey.get(key);
    if (id === undefined || this.refs[id] !== undefined) return;
    this.free(key, id);
  }

  private free(key: string, id: number): void {
    this.byKey.delete(key);
    this.refs[id] = undefined;
    if (id < this.state.length) this.state[id] = 0;
  }

  /** Marks `id` taken, with `flags` written (NO_FLAGS: none yet). */
  private mark(id: number, flags: number): void {
    if (id >= this.state.length) {
      // grown on demand: a large --bpf-lb-map-max costs only what is used
      const grown = new Uint16Array(Math.max(id + 1, Math.min(this.max + 1, this.state.length * 2)));
      grown.set(this.state);
      this.state = grown;
    }
    this.state[id] = flags + 1;
  }

  private allocate(): number {
    for (let n = 0; n < this.max; n++) {
      const id = ((this.next - 1 + n) % this.max) + 1;
      if (id >= this.state.length || this.state[id] === 0) {
        this.mark(id, NO_FLAGS);
        this.next = (id % this.max) + 1;
        return id;
      }
    }
    throw backendIdsExhausted(this.max);
  }
}
