/**
 * Endpoint IDs: node-local, unique, picked at random from 1..4095 (Cilium's idallocator range),
 * so an ID freed by a deleted endpoint is unlikely to be handed out again at once.
 */
import { EndpointError } from './errors.js';

/** Smallest endpoint ID. */
export const MIN_ENDPOINT_ID = 1;
/** Largest endpoint ID. */
export const MAX_ENDPOINT_ID = 4095;

/** Allocates endpoint IDs in O(1): a dense array of free IDs plus each one's position. */
export class EndpointIdAllocator {
  private readonly free: number[] = [];
  private readonly pos = new Int32Array(MAX_ENDPOINT_ID + 1).fill(-1);

  constructor(private readonly random: () => number = Math.random) {
    for (let id = MIN_ENDPOINT_ID; id <= MAX_ENDPOINT_ID; id++) this.push(id);
  }

  /** How many IDs are free. */
  get available(): number {
    return this.free.length;
  }

  /** Whether `id` is allocated. */
  inUse(id: number): boolean {
    return Number.isInteger(id) && id >= MIN_ENDPOINT_ID && id <= MAX_ENDPOINT_ID && this.pos[id] === -1;
  }

  /** A free ID at random; throws EndpointError('failed') when every ID is taken. */
  allocate(): number {
    if (this.free.length === 0) throw new EndpointError('failed', `no free endpoint ID: all ${MAX_ENDPOINT_ID} are in use`);
    const id = this.free[Math.floor(this.random() * this.free.length)]!;
    this.take(id);
    return id;
  }

  /** Takes a given ID; throws EndpointError naming /id when it is out of range or taken. */
  reserve(id: number): number {
    if (!Number.isInteger(id) || id < MIN_ENDPOINT_ID || id > MAX_ENDPOINT_ID) {
      throw new EndpointError('invalid', `endpoint ID ${id} is outside ${MIN_ENDPOINT_ID}..${MAX_ENDPOINT_ID}`, '/id');
    }
    if (this.pos[id] === -1) throw new EndpointError('exists', `endpoint ID ${id} is already in use`, '/id');
    this.take(id);
    return id;
  }

  /** Frees an ID; returns false when it was not allocated. */
  release(id: number): boolean {
    if (!this.inUse(id)) return false;
    this.push(id);
    return true;
  }

  private push(id: number): void {
    this.pos[id] = this.free.length;
    this.free.push(id);
  }

  private take(id: number): void {
    const i = this.pos[id]!;
    const last = this.free.pop()!;
    if (last !== id) {
      this.free[i] = last;
      this.pos[last] = i;
    }
    this.pos[id] = -1;
  }
}
