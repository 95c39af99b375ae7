/**
 * Backend IDs (the backends map's keys), one per backend address (IP, port, protocol), shared by
 * every frontend that has the backend and counted by their references; an ID is freed when its
 * last frontend lets go. IDs found in the kernel's backends map after a restart are kept, so the
 * conntrack entries that name them still find their backend.
 */
import { formatL3n4 } from './addr.js';
import { backendIdsExhausted } from './errors.js';
import type { L3n4Addr } from './types.js';

/** Allocates and counts backend IDs. */
export class BackendIds {
  private readonly ids = new Map<string, number>();
  private readonly refs = new Map<number, Set<string>>();
  private readonly used = new Set<number>();
  private next = 1;

  constructor(private readonly max: number) {}

  /** Takes over an ID found in the kernel (restore). */
  restore(addr: L3n4Addr, id: number): void {
    this.ids.set(formatL3n4(addr), id);
    this.used.add(id);
    if (id >= this.next) this.next = id + 1;
  }

  /** The ID of an address, if it has one. */
  idOf(addr: L3n4Addr): number | undefined {
    return this.ids.get(formatL3n4(addr));
  }

  /** The ID of an address for frontend `fe` (allocated when new), counting the reference. */
  acquire(addr: L3n4Addr, fe: string): number {
    return this.acquireKey(formatL3n4(addr), fe);
  }

  /** {@link acquire} by the address's formatL3n4 text (a caller that has it already). */
  acquireKey(key: string, fe: string): number {
    let id = this.ids.get(key);
    if (id === undefined) {
      id = this.allocate();
      this.ids.set(key, id);
    }
    let r = this.refs.get(id);
    if (!r) this.refs.set(id, (r = new Set()));
    r.add(fe);
    return id;
  }

  /** Drops frontend `fe`'s reference; true when the ID is now unreferenced (and freed). */
  release(addr: L3n4Addr, fe: string): boolean {
    const key = formatL3n4(addr);
    const id = this.ids.get(key);
    if (id === undefined) return false;
    const r = this.refs.get(id);
    r?.delete(fe);
    if (r?.size) return false;
    this.refs.delete(id);
    this.ids.delete(key);
    this.used.delete(id);
    return true;
  }

  /** IDs no frontend references (restored ones nobody took back), with their addresses. */
  unreferenced(): [string, number][] {
    return [...this.ids].filter(([, id]) => !this.refs.get(id)?.size);
  }

  /** Forgets an unreferenced ID (after its entry was deleted). */
  forget(key: string): void {
    const id = this.ids.get(key);
    if (id === undefined || this.refs.get(id)?.size) return;
    this.ids.delete(key);
    this.used.delete(id);
  }

  private allocate(): number {
    for (let n = 0; n < this.max; n++) {
      const id = ((this.next - 1 + n) % this.max) + 1;
      if (!this.used.has(id)) {
        this.used.add(id);
        this.next = (id % this.max) + 1;
        return id;
      }
    }
    throw backendIdsExhausted(this.max);
  }
}
