/**
 * The shared bpf_lxc's maps opened at their pins under the BPF root: cellium_endpoints (typed) and
 * cellium_policy_maps, whose slot of an endpoint names (by fd on write, by map id on read) the
 * endpoint's pinned policy map.
 */
import { join } from 'node:path';
import { ENDPOINTS_MAP, POLICY_MAPS_MAP } from '../../datapath/map-names.js';
import { BpfMap } from '../../bpf/bpf-map.js';
import { hostOrder } from '../../bpf/host-order.js';
import { TypedMap } from '../../bpf/typed-map.js';
import { ENDPOINTS_MAP_SPEC, POLICY_MAPS_MAP_SPEC, endpointInfoCodec, u32Codec, type EndpointInfo } from './layout.js';

/** cellium_endpoints: host interface index -> endpoint constants. */
export type EndpointsMap = TypedMap<number, EndpointInfo>;

/** Opens (or creates and pins) cellium_endpoints under the BPF root. */
export function openEndpointsMap(bpfRoot: string): EndpointsMap {
  return new TypedMap(BpfMap.openOrCreate(join(bpfRoot, ENDPOINTS_MAP), ENDPOINTS_MAP_SPEC), u32Codec, endpointInfoCodec);
}

/**
 * cellium_policy_maps: endpoint ID -> that endpoint's policy map. The kernel makes every write or
 * delete of a map-of-maps slot wait for an RCU grace period (~5-15 ms) before the syscall returns,
 * although the slot holds the new value from its start: `set`/`empty` run the syscall on a worker
 * thread and resolve as soon as the slot reads back changed (what a program run from then on
 * sees), leaving the grace period to the worker. Operations on one slot run in order.
 */
export class PolicyMapsMap {
  /** Per slot, the last operation started: the next one on that slot waits until it became visible. */
  private readonly last = new Map<number, Promise<unknown>>();

  private constructor(
    /** The array of maps. */
    readonly map: BpfMap,
  ) {}

  /** Opens (or creates and pins) cellium_policy_maps under the BPF root. */
  static open(bpfRoot: string): PolicyMapsMap {
    return new PolicyMapsMap(BpfMap.openOrCreate(join(bpfRoot, POLICY_MAPS_MAP), POLICY_MAPS_MAP_SPEC));
  }

  /** Points an endpoint's slot at the policy map `policyMapFd` (atomic for the programs; blocks for the grace period). */
  set(endpointId: number, policyMapFd: number): void {
    this.map.update(slot(endpointId), fdValue(policyMapFd));
  }

  /**
   * Points an endpoint's slot at `policy` unless it holds it already; resolves once the slot holds
   * it, rejects when the write failed.
   */
  setVisible(endpointId: number, policy: BpfMap): Promise<void> {
    return this.inOrder(endpointId, async () => {
      if (this.get(endpointId) === policy.info.id) return;
      const done = this.map.updateAsync(slot(endpointId), fdValue(policy.fd));
      await this.visible(endpointId, policy.info.id, done);
    });
  }

  /**
   * Points many slots at their maps in one BPF_MAP_UPDATE_BATCH on a worker (one grace period for
   * all, instead of one per slot; each slot changes atomically); resolves when the write returned,
   * rejects when it failed (then some slots may hold their new map: read them back). One slot is
   * setVisible. Operations already started on these slots go first.
   */
  setManyVisible(moves: readonly (readonly [endpointId: number, policy: BpfMap])[]): Promise<void> {
    if (moves.length === 0) return Promise.resolve();
    if (moves.length === 1) return this.setVisible(moves[0]![0], moves[0]![1]);
    const keys = Buffer.alloc(4 * moves.length);
    const values = Buffer.alloc(4 * moves.length);
    moves.forEach(([id, m], i) => {
      hostOrder.u32.write(keys, id, i * 4);
      hostOrder.u32.write(values, m.fd, i * 4);
    });
    const before = moves.map(([id]) => this.last.get(id)).filter((p): p is Promise<unknown> => p !== undefined);
    const op = (): Promise<void> => this.map.updateBatchAsync(keys, values, moves.length);
    const p = before.length ? Promise.allSettled(before).then(op) : op();
    for (const [id] of moves) this.last.set(id, p);
    const forget = (): void => {
      for (const [id] of moves) if (this.last.get(id) === p) this.last.delete(id);
    };
    p.then(forget, forget);
    return p;
  }

  /** Empties an endpoint's slot; resolves once it reads back empty (the grace period finishes on a worker). */
  empty(endpointId: number): Promise<void> {
    return this.inOrder(endpointId, async () => {
      if (this.get(endpointId) === undefined) return;
      await this.visible(endpointId, undefined, this.map.deleteAsync(slot(endpointId)));
    });
  }

  /** Runs `op` on a slot once the slot's previous operation became visible (or failed). */
  private inOrder(endpointId: number, op: () => Promise<void>): Promise<void> {
    const before = this.last.get(endpointId);
    const p = before ? before.then(op, op) : op();
    this.last.set(endpointId, p);
    const forget = (): void => {
      if (this.last.get(endpointId) === p) this.last.delete(endpointId);
    };
    p.then(forget, forget);
    return p;
  }

  /** Resolves once the slot reads `want` (map id, undefined: empty), or `done` settled (its error is thrown). */
  private async visible(endpointId: number, want: number | undefined, done: Promise<unknown>): Promise<void> {
    let settled = false;
    done.then(() => (settled = true), () => (settled = true));
    for (let i = 0; !settled; i++) {
      if (this.get(endpointId) === want) return;
      // the worker usually swaps the slot within microseconds; a busy thread pool may hold it longer
      await new Promise((r) => (i < 16 ? setImmediate(r) : setTimeout(r, 1)));
    }
    await done;
  }

  /** The map id in an endpoint's slot, or undefined when it is empty. */
  get(endpointId: number): number | undefined {
    const v = this.map.lookup(slot(endpointId));
    return v ? hostOrder.u32.read(v, 0) : undefined;
  }

  /** Empties an endpoint's slot; false when it was empty (blocks for the grace period). */
  delete(endpointId: number): boolean {
    return this.map.delete(slot(endpointId));
  }

  /** Endpoint IDs whose slot holds a map, ascending. */
  ids(): number[] {
    return [...this.slots().keys()];
  }

  /**
   * Every slot that holds a map: endpoint ID -> map id, ascending by ID (one batch lookup: the
   * kernel skips empty slots; not 4,096 lookups).
   */
  slots(): Map<number, number> {
    const all = this.map.lookupAll(256);
    const out: [number, number][] = [];
    for (let i = 0; i < all.count; i++) out.push([hostOrder.u32.read(all.keys, i * 4), hostOrder.u32.read(all.values, i * 4)]);
    return new Map(out.sort((a, b) => a[0] - b[0]));
  }

  /** Closes the fd (the pinned map stays). */
  close(): void {
    this.map.close();
  }
}

function fdValue(fd: number): Buffer {
  const v = Buffer.alloc(4);
  hostOrder.u32.write(v, fd, 0);
  return v;
}

function slot(endpointId: number): Buffer {
  const k = Buffer.alloc(4);
  hostOrder.u32.write(k, endpointId, 0);
  return k;
}
