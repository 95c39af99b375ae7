/**
 * GetFlows (observer.Observer/GetFlows): the stored flows a request selects (the last or first
 * `number`, or those between `since` and `until`, after its whitelist and blacklist), then with
 * `follow` every new matching flow, until the client cancels or the agent stops. A client slower
 * than the flows lags behind in the ring and is told how many it lost (HUBBLE_RING_BUFFER).
 */
import type { ServerWritableStream } from '@grpc/grpc-js';
import type { Subscription } from 'rxjs';
import { FlowResponseEncoder, compileFilters, flowpb, observerpb, timestamp, timestampNs, type RingEntry } from '../../hubble/index.js';
import { GetFlowsRequestError } from './errors.js';
import type { HubbleObserver, ObserverItem } from './observer.js';

/** A GetFlows call whose responses may be written already encoded (the server's serializer passes Buffers through). */
export type GetFlowsCall = ServerWritableStream<observerpb.GetFlowsRequest, observerpb.GetFlowsResponse | Buffer>;

/** Checks a request's fields against each other; throws GetFlowsRequestError. */
export function checkRequest(req: observerpb.GetFlowsRequest): void {
  if (req.first && req.follow) throw new GetFlowsRequestError('first and follow together', 'first reads the oldest flows and stops; drop one of them');
  if (req.first && req.number === 0) throw new GetFlowsRequestError('first without number', 'give number (hubble observe --first N)');
  if (req.since && req.until && timestampNs(req.since) > timestampNs(req.until)) throw new GetFlowsRequestError('since is after until', 'give a since before until');
}

/** The stored flows a request selects, oldest first. */
export function storedFlows(req: observerpb.GetFlowsRequest, entries: readonly RingEntry[], match: (f: flowpb.Flow) => boolean): RingEntry[] {
  const since = req.since && timestampNs(req.since);
  const until = req.until && timestampNs(req.until);
  const bounded = since !== undefined || until !== undefined;
  // following without a number or since: only new flows
  if (req.follow && req.number === 0 && !bounded) return [];
  const inTime = (e: RingEntry): boolean => {
    if (!bounded) return true;
    const t = timestampNs(e.flow.time!);
    return (since === undefined || t >= since) && (until === undefined || t <= until);
  };
  const out = entries.filter((e) => inTime(e) && match(e.flow));
  if (req.number === 0) return out;
  return req.first ? out.slice(0, req.number) : out.slice(Math.max(0, out.length - req.number));
}

const encoder = new FlowResponseEncoder();

/**
 * The encoded GetFlowsResponse of a stored flow: encoded once, by the first follower that sends it
 * (or the observer, for every flow while somebody follows), and kept with the flow for the others
 * (and for stored flows read again).
 */
export function flowResponseBytes(e: RingEntry, node: string): Buffer {
  return (e.wire ??= encoder.encode(e.flow, node));
}

function lostResponse(lost: flowpb.LostEvent, node: string): observerpb.GetFlowsResponse {
  return { lostEvents: lost, nodeName: node, time: timestamp(BigInt(Date.now()) * 1_000_000n) };
}

/**
 * Responses a call may hold queued before its server waits for the drain (grpc-js buffers what a
 * stream write has not taken yet and sends the queue in one write: see docs/cells/hubble.md,
 * "Batched writes"). It bounds what a slow client costs the agent; the ring holds the rest.
 */
export const FOLLOW_QUEUE = 256;

/**
 * Serves one GetFlows call: the stored flows it selects, then (following) the new ones. A call
 * reads from where it is: new flows wake it; its responses queue in the stream up to `queue`, then
 * it waits for the drain, so a slow client lags behind in the ring instead of making the agent
 * buffer; flows the ring overwrote before it read them are reported as one lost_events
 * (HUBBLE_RING_BUFFER), as Hubble does.
 */
export function serveGetFlows(call: GetFlowsCall, observer: HubbleObserver, queue = FOLLOW_QUEUE): void {
  const req = call.request;
  const node = observer.nodeName;
  const ring = observer.ring;
  const match = compileFilters(req.whitelist, req.blacklist);
  const until = req.until && timestampNs(req.until);
  const stored = storedFlows(req, ring.snapshot(), match);
  let nextStored = 0;
  let next = ring.seen + 1;
  let blocked = false;
  let ended = false;
  let sub: Subscription | undefined;
  /** Writes a response; blocked once the stream asks for a drain with `queue` responses waiting. */
  const send = (m: Buffer | observerpb.GetFlowsResponse): void => {
    if (!call.write(m) && call.writableLength >= queue) blocked = true;
  };
  const end = (): void => {
    if (ended) return;
    ended = true;
    sub?.unsubscribe();
    call.end();
  };
  const pump = (): void => {
    while (!blocked && !ended && nextStored < stored.length) send(flowResponseBytes(stored[nextStored++]!, node));
    if (blocked || ended) return;
    if (!req.follow) return end();
    while (!blocked && !ended && next <= ring.seen) {
      if (next < ring.oldest) {
        const lost = ring.oldest - next;
        next = ring.oldest;
        observer.countRingLoss(lost);
        send(lostResponse({ source: flowpb.LostEventSource.HUBBLE_RING_BUFFER, numEventsLost: lost, cpu: undefined }, node));
        continue;
      }
      const e = ring.at(next++)!;
      if (until !== undefined && timestampNs(e.flow.time!) > until) return end();
      if (match(e.flow)) send(flowResponseBytes(e, node));
    }
  };
  const onItem = (item: ObserverItem): void => {
    if (item.kind === 'flow') {
      if (nextStored === stored.length) pump();
    } else if (!blocked) send(lostResponse(item.lost, node));
  };
  // not a job: one call's stream, unsubscribed when the call ends or is cancelled
  if (req.follow) sub = observer.items$.subscribe({ next: onItem, complete: end });
  call.on('drain', () => {
    blocked = false;
    pump();
  });
  const stop = (): void => {
    ended = true;
    sub?.unsubscribe();
  };
  call.on('cancelled', stop);
  call.on('close', stop);
  call.on('error', stop);
  pump();
}
