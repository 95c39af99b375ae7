/** What the metrics cell offers other cells, and the optional regeneration feed it subscribes to. */
import type { Observable } from 'rxjs';
import type { Registry } from 'prom-client';
import { groupToken, token } from '../../hive/token.js';

/** The agent's Prometheus registry; cells may register metrics of their own (prefix `cellium_`). */
export const MetricsRegistryToken = token<Registry>('MetricsRegistry');

/**
 * A cell's own metrics: called once with the agent's registry by the metrics cell when it starts;
 * returns what stops feeding them. Cells contribute with `provideInto(MetricsCollectorsToken, ...)`,
 * so a cell embedded without the metrics cell still starts (its collector is simply not called).
 */
export type MetricsCollector = (registry: Registry) => { unsubscribe(): void };

/** Value group of the cells' metrics collectors. Empty is fine. */
export const MetricsCollectorsToken = groupToken<MetricsCollector>('MetricsCollectors');

/** One finished endpoint regeneration. */
export interface RegenerationEvent {
  readonly endpointId: number;
  readonly outcome: 'success' | 'fail';
  readonly seconds: number;
}

/**
 * Value group of regeneration streams feeding cellium_endpoint_regenerations_total and
 * cellium_endpoint_regeneration_time_stats_seconds: the endpoint cell contributes its stream with
 * `provideInto(RegenerationEventsToken, (m) => m.regenerations$, ...)`. Empty is fine.
 */
export const RegenerationEventsToken = groupToken<Observable<RegenerationEvent>>('RegenerationEvents');

/** Where /metrics is served, once started. */
export interface MetricsServer {
  /** `host:port`, or undefined when --prometheus-serve-addr is empty. */
  address(): string | undefined;
  /** The metrics in Prometheus text format. */
  scrape(): Promise<string>;
}

/** Token for the metrics server. */
export const MetricsServerToken = token<MetricsServer>('MetricsServer');
