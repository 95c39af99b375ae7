/** The datapath-bpf cell's wiring: its module, providers and what they are built from (index.ts is its public face). */
import { config, invoke, module, provideInto, type DepsValues } from '../../hive/cell.js';
import { HealthToken } from '../../hive/health.js';
import { JobsToken } from '../../hive/jobs.js';
import { LifecycleToken } from '../../hive/lifecycle.js';
import { LoggerToken } from '../../hive/logger.js';
import { bpfAvailable } from '../../bpf/index.js';
import { MetricsCollectorsToken, type MetricsCollector } from '../api-metrics/types.js';
import { ctTimeoutsOf, DatapathConfigToken, DatapathProvidersToken, SelectedDatapathToken, sysfsLinkChecker, type DatapathProvider } from '../datapath/index.js';
import { BpfDatapathConfigToken, bpfDatapathConfigSchema } from '../../datapath/bpf-config.js';
import { registerCtGcMetrics } from './ct-metrics.js';
import { registerTrafficMetrics } from './traffic-metrics.js';
import { BpfDatapath } from './datapath.js';
import type { BpfTableReport } from './maps.js';

/** How often the module's health is refreshed from the tables' status. */
const STATUS_INTERVAL_MS = 2000;

/** One line per table: `cellium_lxc done 4/4`, with the errors when there are any. */
export function describeTables(reports: readonly BpfTableReport[]): { ok: boolean; message: string } {
  const ok = reports.every((r) => r.errors === 0);
  const message = reports.map((r) => `${r.name} ${r.state} ${r.done}/${r.objects}${r.errors ? ` (${r.errors} failing: ${r.lastErrors.join('; ')})` : ''}`).join(', ');
  return { ok, message };
}

const providerDeps = {
  cfg: BpfDatapathConfigToken, dpCfg: DatapathConfigToken, lc: LifecycleToken, jobs: JobsToken, health: HealthToken, log: LoggerToken,
} as const;

/** The BPF datapath's provider: available when the addon loads, bpf_lxc is built and bpf() works. */
export function bpfDatapathProvider(d: DepsValues<typeof providerDeps>): DatapathProvider {
  return {
    mode: 'bpf',
    preferInAuto: true,
    unavailable: () => {
      const a = bpfAvailable();
      return a.ok ? undefined : a.reason;
    },
    create: () => {
      const dp = new BpfDatapath(d.cfg, d.log, { ctTimeouts: ctTimeoutsOf(d.dpCfg) });
      d.lc.append({ name: 'bpf-datapath', onStart: () => dp.start(), onStop: () => dp.stop() });
      dp.maps.runAsJobs(d.jobs);
      d.jobs.timer('bpf-map-status', async () => {
        const { ok, message } = describeTables(dp.maps.report());
        if (ok) d.health.ok(message);
        else d.health.degraded(message);
      }, STATUS_INTERVAL_MS);
      if (d.cfg.bpfMapPruneInterval > 0) d.jobs.timer('bpf-map-prune', async () => void (await dp.prune()), d.cfg.bpfMapPruneInterval);
      const gcHealth = d.health.scope('conntrack-gc');
      const ctHealth = d.health.scope('conntrack');
      d.jobs.oneShot('conntrack-gc', async ({ signal }) => {
        d.log.info({ intervalMs: dp.gc.intervalMs, pinned: d.cfg.conntrackGcInterval > 0 }, 'starting the conntrack garbage collector');
        for (;;) {
          const run = await dp.gc.collect();
          if (run.errors.length) gcHealth.degraded(dp.gc.describe());
          else gcHealth.ok(dp.gc.describe());
          const pressure = dp.gc.pressure.state();
          if (pressure.degraded) {
            ctHealth.degraded(pressure.message);
            d.log.warn({ evicted: run.evicted, nextMs: dp.gc.intervalMs }, pressure.message);
          } else ctHealth.ok(pressure.message);
          if (run.deleted) d.log.info({ deleted: run.deleted, scanned: run.scanned, ms: Math.round(run.ms), nextMs: dp.gc.intervalMs }, 'conntrack garbage collection');
          try {
            await dp.gc.untilDue(signal);
          } catch {
            return;
          }
        }
      });
      return dp;
    },
    linkExists: sysfsLinkChecker,
  };
}

const notInUseDeps = { selected: SelectedDatapathToken, health: HealthToken } as const;

/** With another datapath selected, the module's health says so (instead of staying `unknown`). */
function reportNotInUse({ selected, health }: DepsValues<typeof notInUseDeps>): void {
  if (selected.datapath.mode === 'bpf') return;
  const why = selected.requested === 'auto' ? bpfAvailable().reason : undefined;
  health.ok(`not in use: --datapath-mode=${selected.requested} runs the ${selected.datapath.mode} datapath${why ? ` (${why})` : ''}`);
}

const metricsDeps = { selected: SelectedDatapathToken, jobs: JobsToken } as const;

/**
 * The conntrack garbage collector's and the traffic counters' metrics, for the metrics cell (BPF
 * datapath only). The collector's reports reach the metrics through the observer job
 * `conntrack-gc-metrics`: subscribed when the metrics cell registers them (immediate) and counted
 * before the report's next() returns (sync), as the subscription it replaces; stopped with the hive.
 */
function datapathMetrics({ selected, jobs }: DepsValues<typeof metricsDeps>): MetricsCollector {
  return (registry) => {
    const dp = selected.datapath;
    if (!(dp instanceof BpfDatapath)) return { unsubscribe: () => undefined };
    const gcMetrics = registerCtGcMetrics(registry, dp.gc);
    jobs.observer('conntrack-gc-metrics', dp.gc.reports$, (r) => gcMetrics.record(r), { immediate: true, sync: true });
    return registerTrafficMetrics(registry, () => dp.kernel.traffic());
  };
}

/** The BPF datapath cell. */
export const bpfDatapathCell = module(
  'datapath-bpf',
  'BPF datapath: pinned maps written by reconcilers, the bpf_lxc loader',
  config(BpfDatapathConfigToken, bpfDatapathConfigSchema),
  provideInto(DatapathProvidersToken, bpfDatapathProvider, providerDeps),
  invoke('bpf-datapath-health', reportNotInUse, notInUseDeps),
  provideInto(MetricsCollectorsToken, datapathMetrics, metricsDeps),
);
