/**
 * The endpoint audit itself: plain logic with no hive in sight, so a test constructs it with two
 * arguments. The cell (cell.ts) feeds it from the endpoint manager's streams.
 */
import type { EndpointView } from '../../../src/cells/endpoint/index.js';

/** One lifecycle event of an endpoint. */
export interface AuditEvent {
  readonly kind: 'created' | 'restored' | 'deleted';
  readonly endpoint: number;
  /** `namespace/pod` when the endpoint is a pod's. */
  readonly pod?: string;
  /** The identity it had at that moment (a restored endpoint's; none when just created, as the first regeneration gives it, nor once deleted). */
  readonly identity?: number;
  readonly at: Date;
}

/** Keeps the last `size` endpoint events, oldest first. */
export class EndpointAudit {
  private readonly ring: AuditEvent[] = [];

  constructor(
    private readonly size: number,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** Records one event, dropping the oldest beyond the size. */
  record(kind: AuditEvent['kind'], ep: EndpointView): void {
    this.ring.push({ kind, endpoint: ep.id, ...(ep.podName ? { pod: ep.podName } : {}), ...(ep.identity !== undefined ? { identity: ep.identity } : {}), at: this.now() });
    if (this.ring.length > this.size) this.ring.splice(0, this.ring.length - this.size);
  }

  /** The kept events, oldest first. */
  events(): readonly AuditEvent[] {
    return [...this.ring];
  }
}
