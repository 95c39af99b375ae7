/**
 * Prometheus metrics of the conntrack garbage collector, Cilium's names with the `cellium_`
 * prefix: runs by map and outcome, entries alive and deleted at the end of the last run, run
 * durations, the current interval, and entries scrubbed for deleted endpoints; and the maps'
 * pressure: entries the kernel evicted (ct-pressure.ts) and each map's occupancy at the last run
 * (Cilium's bpf_map_pressure).
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { CtGarbageCollector, GcReport } from './ct-gc.js';

/** The metrics on one registry; `record` feeds them one of the collector's reports. */
export interface CtGcMetrics {
  record(r: GcReport): void;
}

/**
 * Registers the metrics on `registry` (the interval is read from `gc` at each scrape); the
 * collector's reports reach them through `record` (in the agent, the cell's observer job
 * `conntrack-gc-metrics` over `gc.reports$`).
 */
export function registerCtGcMetrics(registry: Registry, gc: CtGarbageCollector): CtGcMetrics {
  const registers = [registry];
  const labelNames = ['family', 'protocol', 'status'] as const;
  const runs = new Counter({ name: 'cellium_datapath_conntrack_gc_runs_total', help: 'Conntrack garbage collection runs per map, by outcome (completed, uncompleted)', labelNames, registers });
  const entries = new Gauge({
    name: 'cellium_datapath_conntrack_gc_entries', labelNames, registers,
    help: 'Conntrack entries alive and deleted at the end of the last garbage collection run, per map (a run comes early once the datapath created half as many entries as a map held)',
  });
  const evictions = new Counter({
    name: 'cellium_datapath_conntrack_evictions_total', labelNames: ['family', 'protocol'] as const, registers,
    help: 'Conntrack entries the kernel evicted from a full map (live connections losing their entries), counted at garbage collection runs',
  });
  const pressure = new Gauge({ name: 'cellium_bpf_map_pressure', help: 'Share of a conntrack map in use at the end of the last garbage collection run', labelNames: ['map_name'] as const, registers });
  const duration = new Histogram({
    name: 'cellium_datapath_conntrack_gc_duration_seconds', help: 'Duration of a conntrack garbage collection run over one map', labelNames, registers,
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  });
  const scrubbed = new Counter({ name: 'cellium_datapath_conntrack_scrub_deleted_total', help: 'Conntrack entries deleted because their endpoint was deleted', labelNames: ['family', 'protocol'] as const, registers });
  new Gauge({
    name: 'cellium_datapath_conntrack_gc_interval_seconds', help: 'Interval until the next conntrack garbage collection run', labelNames: ['global'] as const, registers,
    collect() {
      this.set({ global: 'global' }, gc.intervalMs / 1000);
    },
  });
  const record = (r: GcReport): void => {
    const family = r.family;
    const protocol = r.protocol;
    if (r.kind === 'scrub') {
      scrubbed.inc({ family, protocol }, r.deleted);
      return;
    }
    const status = r.completed ? 'completed' : 'uncompleted';
    runs.inc({ family, protocol, status });
    duration.observe({ family, protocol, status }, r.seconds);
    entries.set({ family, protocol, status: 'alive' }, r.scanned - r.deleted);
    entries.set({ family, protocol, status: 'deleted' }, r.deleted);
    if (r.maxEntries) {
      evictions.inc({ family, protocol }, r.evicted ?? 0);
      pressure.set({ map_name: r.map }, (r.scanned - r.deleted) / r.maxEntries);
    }
  };
  return { record };
}
