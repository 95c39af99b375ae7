/**
 * The observer's ring of the last N flows (Hubble's container.Ring): a fixed array written
 * round-robin; readers take a snapshot of what it holds, oldest first.
 */
import type { Flow } from './gen/flow/flow.js';

/** A flow in the ring with its sequence number (1 for the first flow ever written). */
export interface RingEntry {
  readonly seq: number;
  readonly flow: Flow;
  /** The flow's encoded GetFlowsResponse, made by the first follower that sends it and reused by the others. */
  wire?: Buffer;
}

/** The last `capacity` flows. */
export class FlowRing {
  private readonly slots: (RingEntry | undefined)[];
  private written = 0;

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError(`ring capacity must be a whole number of at least 1, got ${capacity}`);
    this.slots = new Array<RingEntry | undefined>(capacity);
  }

  /** Adds a flow, overwriting the oldest when full; returns its entry. */
  push(flow: Flow): RingEntry {
    const entry: RingEntry = { seq: ++this.written, flow, wire: undefined };
    this.slots[(entry.seq - 1) % this.capacity] = entry;
    return entry;
  }

  /** How many flows it holds now. */
  get size(): number {
    return Math.min(this.written, this.capacity);
  }

  /** How many flows were ever written. */
  get seen(): number {
    return this.written;
  }

  /** The sequence number of the oldest flow it holds (seen + 1 when empty). */
  get oldest(): number {
    return this.written - this.size + 1;
  }

  /** The entry with sequence number `seq`, or undefined when it was overwritten or not written yet. */
  at(seq: number): RingEntry | undefined {
    const e = this.slots[(seq - 1) % this.capacity];
    return e?.seq === seq ? e : undefined;
  }

  /** The flows it holds, oldest first. */
  snapshot(): RingEntry[] {
    const n = this.size;
    const out = new Array<RingEntry>(n);
    const first = this.written - n;
    for (let i = 0; i < n; i++) out[i] = this.slots[(first + i) % this.capacity]!;
    return out;
  }
}
