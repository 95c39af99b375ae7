/**
 * GetFlows (observer.Observer/GetFlows): the stored flows a request selects (the last or first
 * `number`, or those between `since` and `until`, after its whitelist and blacklist), then with
 * `follow` every new matching flow, until the client cancels or the agent stops. A client slower
 * than the flows loses them rather than making the agent buffer: while its stream's buffer is
 * full, flows for it are counted, then reported as one lost_events (OBSERVER_EVENTS_QUEUE).
 */
import type { ServerWritableStream } from '@grpc/grpc-js';
import { compileFilters, flowpb, observerpb, timestamp, timestampNs, type RingEntry } from '../../hubble/index.js';
import { GetFlowsRequestError } from './errors.js';
import type { HubbleObserver, ObserverItem } from './observer.js';

type Call = ServerWritableStream<observerpb.GetFlowsRequest, observerpb.GetFlowsResponse>;

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

/** One response of a flow. */
function flowResponse(e: RingEntry, node: string): observerpb.GetFlowsResponse {
  return { flow: e.flow, nodeName: node, time: e.flow.time };
}

function lostResponse(lost: flowpb.LostEvent, node: string): observerpb.GetFlowsResponse {
  return { lostEvents: lost, nodeName: node, time: timestamp(BigInt(Date.now()) * 1_000_000n) };
}

/** Serves one GetFlows call; `onEnd` runs once when it is over. */
export function serveGetFlows(call: Call, observer: HubbleObserver): void {
  const req = call.request;
  const node = observer.nodeName;
  const match = compileFilters(req.whitelist, req.blacklist);
  const until = req.until && timestampNs(req.until);
  for (const e of storedFlows(req, observer.ring.snapshot(), match)) call.write(flowResponse(e, node));
  if (!req.follow) {
    call.end();
    return;
  }
  let lost = 0;
  const onItem = (item: ObserverItem): void => {
    if (item.kind === 'flow') {
      if (until !== undefined && timestampNs(item.entry.flow.time!) > until) {
        sub.unsubscribe();
        call.end();
        return;
      }
      if (!match(item.entry.flow)) return;
    }
    const count = item.kind === 'lost' ? item.lost.numEventsLost : 1;
    if (call.writableNeedDrain) {
      lost += count;
      return;
    }
    call.write(item.kind === 'flow' ? flowResponse(item.entry, node) : lostResponse(item.lost, node));
  };
  // not a job: one call's stream, unsubscribed when the call ends or is cancelled
  const sub = observer.items$.subscribe({ next: onItem, complete: () => call.end() });
  call.on('drain', () => {
    if (lost === 0) return;
    call.write(lostResponse({ source: flowpb.LostEventSource.OBSERVER_EVENTS_QUEUE, numEventsLost: lost, cpu: undefined }, node));
    lost = 0;
  });
  const stop = (): void => sub.unsubscribe();
  call.on('cancelled', stop);
  call.on('close', stop);
  call.on('error', stop);
}
