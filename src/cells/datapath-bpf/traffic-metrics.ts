/**
 * The datapath's traffic counters as Prometheus metrics, Cilium's names with the `cellium_`
 * prefix: drops by reason and direction, forwarded packets by direction (packets and bytes), and
 * monitor events the ring buffer lost. Read from cellium_metrics at each scrape.
 */
import { Counter, type Registry } from 'prom-client';
import type { TrafficCounters } from '../../maps/index.js';

/** Registers the metrics on `registry`; `read` is called once per scrape. */
export function registerTrafficMetrics(registry: Registry, read: () => TrafficCounters): { unsubscribe(): void } {
  const registers = [registry];
  let last: TrafficCounters | undefined;
  let lastAt = 0;
  // one read serves the five metrics of a scrape
  const now = (): TrafficCounters => {
    if (!last || Date.now() - lastAt > 100) {
      last = read();
      lastAt = Date.now();
    }
    return last;
  };
  const counter = (name: string, help: string, labelNames: readonly string[], fill: (c: Counter<string>, t: TrafficCounters) => void) =>
    new Counter({
      name, help, labelNames, registers,
      collect() {
        this.reset();
        fill(this, now());
      },
    });
  counter('cellium_drop_count_total', 'Packets dropped by the datapath, by reason and direction', ['reason', 'direction'], (c, t) => {
    for (const d of t.drops) c.inc({ reason: d.reason!, direction: d.direction.toUpperCase() }, d.packets);
  });
  counter('cellium_drop_bytes_total', 'Bytes dropped by the datapath, by reason and direction', ['reason', 'direction'], (c, t) => {
    for (const d of t.drops) c.inc({ reason: d.reason!, direction: d.direction.toUpperCase() }, d.bytes);
  });
  counter('cellium_forward_count_total', 'Packets forwarded by the datapath, by direction', ['direction'], (c, t) => {
    for (const f of t.forwarded) c.inc({ direction: f.direction.toUpperCase() }, f.packets);
  });
  counter('cellium_forward_bytes_total', 'Bytes forwarded by the datapath, by direction', ['direction'], (c, t) => {
    for (const f of t.forwarded) c.inc({ direction: f.direction.toUpperCase() }, f.bytes);
  });
  counter('cellium_datapath_monitor_events_lost_total', 'Monitor events the datapath could not report (its ring buffer was full)', [], (c, t) => {
    c.inc(t.eventsLost);
  });
  const names = ['cellium_drop_count_total', 'cellium_drop_bytes_total', 'cellium_forward_count_total', 'cellium_forward_bytes_total', 'cellium_datapath_monitor_events_lost_total'];
  return { unsubscribe: () => names.forEach((n) => registry.removeSingleMetric(n)) };
}
