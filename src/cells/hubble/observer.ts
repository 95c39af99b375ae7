/**
 * The Hubble observer (Hubble's LocalObserverServer in small): turns the monitor's records into
 * flows (both sides and services enriched), keeps the last N in a ring, counts what it has seen,
 * and hands each new flow and each report of lost events to the followers and the metrics.
 */
import { randomUUID } from 'node:crypto';
import { Subject, type Observable } from 'rxjs';
import { FlowRing, toFlow, flowpb, type RingEntry, type Timestamp } from '../../hubble/index.js';
import type { MonitorRecord } from '../monitor/index.js';
import type { FlowEndpoint } from '../../monitor/index.js';

/** What the observer tells its followers: a new flow, or events lost before they became flows. */
export type ObserverItem =
  | { readonly kind: 'flow'; readonly entry: RingEntry }
  | { readonly kind: 'lost'; readonly lost: flowpb.LostEvent };

/** The service answering on an address and port (a frontend), when there is one. */
export type ServiceLookup = (ip: string, port: number, protocol: number) => flowpb.Service | undefined;

/** The workloads of a pod (`namespace`, `pod` as the endpoint names it: `namespace/name`), or none when unknown. */
export type WorkloadLookup = (namespace: string, pod: string) => flowpb.Workload[];

/** Counts of the observer since it started. */
export interface ObserverStats {
  readonly numFlows: number;
  readonly maxFlows: number;
  readonly seenFlows: number;
  readonly uptimeNs: number;
  /** Flows per second over the last minute. */
  readonly flowsRate: number;
}

/** The workloads of a pod no lookup knows (one array for all: flows share it and never change it). */
const NO_WORKLOADS: flowpb.Workload[] = [];

/** Events lost before a client got them, by where (Hubble's lost event sources). */
export interface LostEventCounts {
  /** The datapath's ring buffer was full: the events never reached the agent. */
  readonly perfEventRingBuffer: number;
  /** A follower lagged behind the observer's ring, which overwrote them (summed over followers). */
  readonly hubbleRingBuffer: number;
}

/** Keeps and fans out the node's flows. */
export class HubbleObserver {
  readonly ring: FlowRing;
  private readonly items = new Subject<ObserverItem>();
  private readonly startedNs = process.hrtime.bigint();
  /** Flow counts per second of the last minute (index: second % 60) and which second each slot holds. */
  private readonly perSecond = new Array<number>(60).fill(0);
  private readonly slotSecond = new Array<number>(60).fill(-1);
  private lastTime = '';
  private lastMs = 0;
  private lastStamp: Timestamp = { seconds: 0, nanos: 0 };
  private lostPerf = 0;
  private lostRing = 0;

  constructor(
    capacity: number,
    readonly nodeName: string,
    private readonly services: ServiceLookup = () => undefined,
    private readonly workloads: WorkloadLookup = () => NO_WORKLOADS,
  ) {
    this.ring = new FlowRing(capacity);
  }

  /** Every new flow and report of lost events, as they come (no replay). */
  get items$(): Observable<ObserverItem> {
    return this.items.asObservable();
  }

  /** Takes one monitor record: an event becomes a flow in the ring; lost events are reported. */
  onRecord(rec: MonitorRecord): void {
    if (rec.kind === 'lost') {
      this.lostPerf += rec.count;
      this.items.next({ kind: 'lost', lost: { source: flowpb.LostEventSource.PERF_EVENT_RING_BUFFER, numEventsLost: rec.count, cpu: undefined } });
      return;
    }
    const e = rec.event.event;
    // the monitor stamps every event of one read with the same time: parsed once a read
    if (rec.event.time !== this.lastTime) {
      this.lastTime = rec.event.time;
      this.lastMs = Date.parse(rec.event.time);
      this.lastStamp = Object.freeze({ seconds: Math.floor(this.lastMs / 1000), nanos: (this.lastMs % 1000) * 1_000_000 });
    }
    const timeMs = this.lastMs;
    const flow = toFlow(rec.event, {
      node: this.nodeName,
      time: this.lastStamp,
      uuid: randomUUID(),
      sourceService: e.src ? this.services(e.src, e.sport, e.protocol) : undefined,
      destinationService: e.dst ? this.services(e.dst, e.dport, e.protocol) : undefined,
      sourceWorkloads: this.sideWorkloads(rec.event.source),
      destinationWorkloads: this.sideWorkloads(rec.event.destination),
    });
    this.countRate(Math.floor(timeMs / 1000));
    this.items.next({ kind: 'flow', entry: this.ring.push(flow) });
  }

  /** The counts ServerStatus and GetNodes report. */
  stats(nowMs = Date.now()): ObserverStats {
    const now = Math.floor(nowMs / 1000);
    let last = 0;
    for (let i = 0; i < 60; i++) if (this.slotSecond[i]! > now - 60 && this.slotSecond[i]! <= now) last += this.perSecond[i]!;
    return {
      numFlows: this.ring.size,
      maxFlows: this.ring.capacity,
      seenFlows: this.ring.seen,
      uptimeNs: Number(process.hrtime.bigint() - this.startedNs),
      flowsRate: last / 60,
    };
  }

  /** Counts flows a follower never got because the ring overwrote them first (GetFlows tells it so). */
  countRingLoss(n: number): void {
    this.lostRing += n;
  }

  /** The events lost so far, by source. */
  get lostEvents(): LostEventCounts {
    return { perfEventRingBuffer: this.lostPerf, hubbleRingBuffer: this.lostRing };
  }

  /** Ends every follower (agent stop). */
  stop(): void {
    this.items.complete();
  }

  private sideWorkloads(s: FlowEndpoint): flowpb.Workload[] | undefined {
    return s.pod_name && s.namespace ? this.workloads(s.namespace, s.pod_name) : undefined;
  }

  private countRate(second: number): void {
    const slot = second % 60;
    if (this.slotSecond[slot] !== second) {
      this.slotSecond[slot] = second;
      this.perSecond[slot] = 0;
    }
    this.perSecond[slot]!++;
  }
}

