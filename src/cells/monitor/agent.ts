/**
 * The monitor agent (Cilium's monitor agent): reads the datapath's ring buffer while somebody
 * listens, a batch every POLL_MS from a timer (each read is a non-blocking consume of what the
 * ring holds: the event loop never waits on the kernel), enriches the events and fans them out to
 * the subscribers. Events the ring had no room for (the datapath counts them) are reported to
 * every subscriber as lost.
 */
import { Observable, Subject } from 'rxjs';
import type { Logger } from '../../hive/logger.js';
import { MonitorEventReader, type EnrichedEvent } from '../../monitor/index.js';
import type { Datapath } from '../../datapath/types.js';
import type { Enricher } from './enrich.js';

/** How often the ring buffer is read while there are subscribers. */
export const POLL_MS = 50;

/** What the agent tells its subscribers. */
export type MonitorRecord =
  | { readonly kind: 'event'; readonly event: EnrichedEvent }
  | { readonly kind: 'lost'; readonly count: number; readonly why: string };

/** Reads, enriches and fans out the datapath's monitor events. */
export class MonitorAgent {
  private readonly records = new Subject<MonitorRecord>();
  private subscribers = 0;
  private timer?: NodeJS.Timeout;
  private reader?: MonitorEventReader;
  private lostSeen?: number;
  private stopped = false;

  constructor(
    private readonly datapath: Datapath,
    private readonly enricher: Enricher,
    private readonly log: Logger,
  ) {}

  /** Why there are no events (the memory datapath has no ring buffer), or undefined when there are. */
  get unavailable(): string | undefined {
    return this.datapath.monitorEvents ? undefined : `the ${this.datapath.mode} datapath reports no monitor events (run the agent with --datapath-mode=bpf)`;
  }

  /** The records; reading starts with the first subscriber and stops after the last one left. */
  readonly records$: Observable<MonitorRecord> = new Observable<MonitorRecord>((subscriber) => {
    // not a job: the implementation of records$, it hands each subscriber's records through and ends with it
    const sub = this.records.subscribe(subscriber);
    if (this.subscribers++ === 0 && !this.stopped) this.resume();
    return () => {
      sub.unsubscribe();
      if (--this.subscribers === 0) this.pause();
    };
  });

  /** How many subscribers listen now. */
  get listeners(): number {
    return this.subscribers;
  }

  /** Stops reading for good (agent stop); subscribers complete. */
  stop(): void {
    this.stopped = true;
    this.pause();
    this.records.complete();
  }

  private resume(): void {
    if (this.unavailable) return;
    this.timer = setInterval(() => this.poll(), POLL_MS);
  }

  private pause(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.reader?.close();
    this.reader = undefined;
    this.lostSeen = undefined;
  }

  /** One batch: everything the ring holds now, then the lost counter. */
  private poll(): void {
    const events = this.datapath.monitorEvents!;
    try {
      this.reader ??= MonitorEventReader.open(events.bpfRoot);
      const time = new Date().toISOString();
      for (const event of this.enricher.enrichAll(this.reader.read(), time)) this.records.next({ kind: 'event', event });
      const lost = events.eventsLost();
      if (this.lostSeen !== undefined && lost > this.lostSeen) this.records.next({ kind: 'lost', count: lost - this.lostSeen, why: "the datapath's ring buffer was full" });
      this.lostSeen = lost;
    } catch (err) {
      this.log.warn({ err: (err as Error).message }, 'monitor: reading the datapath events failed; retrying');
      this.reader?.close();
      this.reader = undefined;
    }
  }
}
