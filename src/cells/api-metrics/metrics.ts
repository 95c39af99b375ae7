/**
 * The agent's metrics, named like Cilium's with the `cellium_` prefix. Gauges of current state
 * (endpoints by state, identities by type, policy rules and revision) are read from the managers
 * at scrape time; counters and histograms are fed by the managers' Observables (regenerations,
 * policy changes), the API rate limiter's reports and the API server's answered requests, each
 * followed by an observer job of the metrics module.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { merge, type Observable } from 'rxjs';
import type { Jobs } from '../../hive/jobs.js';
import type { LimiterReport } from '../api-server/types.js';
import type { RequestRecord } from '../api-server/types.js';
import type { EndpointManager } from '../endpoint/types.js';
import type { IdentityAllocator } from '../identity/types.js';
import type { PolicyChange, PolicyRepository } from '../policy/types.js';
import type { RegenerationEvent } from './types.js';

/** The sources the metrics read. */
export interface MetricSources {
  readonly endpoints: EndpointManager;
  readonly identities: IdentityAllocator;
  readonly policy: PolicyRepository;
  readonly limiterReports: Observable<LimiterReport>;
  readonly requests: Observable<RequestRecord>;
  readonly regenerations: readonly Observable<RegenerationEvent>[];
}

/** Cilium's identity types: reserved, cluster_local (global) and node_local (CIDR, local scope). */
export function identityType(id: number, reserved: boolean, localScope: number): 'reserved' | 'cluster_local' | 'node_local' {
  if (reserved) return 'reserved';
  return id >= localScope ? 'node_local' : 'cluster_local';
}

/**
 * Registers every metric on `registry` and follows the sources as observer jobs of `jobs`: from
 * now on (values during the start hooks count) and handled inside each source's `next`, so a
 * counter has moved once the event was emitted; ended when the hive stops.
 */
export function registerAgentMetrics(registry: Registry, src: MetricSources, jobs: Jobs): void {
  const registers = [registry];
  new Gauge({
    name: 'cellium_endpoint',
    help: 'Number of endpoints managed by this agent',
    registers,
    collect() {
      this.set(src.endpoints.getEndpoints().length);
    },
  });
  new Gauge({
    name: 'cellium_endpoint_state',
    help: 'Count of all endpoints, tagged by their state',
    labelNames: ['endpoint_state'],
    registers,
    collect() {
      this.reset();
      for (const ep of src.endpoints.getEndpoints()) this.inc({ endpoint_state: ep.state });
    },
  });
  new Gauge({
    name: 'cellium_identity',
    help: 'Number of identities currently allocated, by type',
    labelNames: ['type'],
    registers,
    collect() {
      this.reset();
      const scope = src.identities.range.localScope;
      for (const type of ['reserved', 'cluster_local', 'node_local']) this.set({ type }, 0);
      for (const i of src.identities.list()) this.inc({ type: identityType(i.id, i.reserved, scope) });
    },
  });
  new Gauge({
    name: 'cellium_policy',
    help: 'Number of policy rules currently in the repository',
    registers,
    collect() {
      this.set(src.policy.get().length);
    },
  });
  new Gauge({
    name: 'cellium_policy_max_revision',
    help: 'Highest policy revision number in the agent',
    registers,
    collect() {
      this.set(src.policy.revision);
    },
  });
  const policyChanges = new Counter({ name: 'cellium_policy_change_total', help: 'Number of policy repository changes, by outcome', labelNames: ['outcome'], registers });
  const regenerations = new Counter({ name: 'cellium_endpoint_regenerations_total', help: 'Count of all endpoint regenerations that have completed, by outcome', labelNames: ['outcome'], registers });
  const regenerationTime = new Histogram({
    name: 'cellium_endpoint_regeneration_time_stats_seconds',
    help: 'Endpoint regeneration time stats, by scope',
    labelNames: ['scope', 'status'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers,
  });
  const apiTime = new Histogram({
    name: 'cellium_agent_api_process_time_seconds',
    help: 'Duration of processed API calls, by path, method and return code',
    labelNames: ['path', 'method', 'return_code'],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers,
  });
  const limiterProcessed = new Counter({ name: 'cellium_api_limiter_processed_requests_total', help: 'Total number of API requests processed by the rate limiter', labelNames: ['api_call', 'outcome', 'return_code'], registers });
  const limiterWait = new Gauge({ name: 'cellium_api_limiter_wait_duration_seconds', help: 'Current wait time of API calls (mean, min, max)', labelNames: ['api_call', 'value'], registers });
  const limiterProcessing = new Gauge({ name: 'cellium_api_limiter_processing_duration_seconds', help: 'Current processing time of API calls (mean, estimated)', labelNames: ['api_call', 'value'], registers });
  const limiterInFlight = new Gauge({ name: 'cellium_api_limiter_requests_in_flight', help: 'Current requests in flight (in-flight, limit)', labelNames: ['api_call', 'value'], registers });
  const limiterRate = new Gauge({ name: 'cellium_api_limiter_rate_limit', help: 'Current rate limiting configuration (limit, burst)', labelNames: ['api_call', 'value'], registers });
  const limiterAdjustment = new Gauge({ name: 'cellium_api_limiter_adjustment_factor', help: 'Current adjustment factor while auto adjusting', labelNames: ['api_call'], registers });
  const limiterWaitHistory = new Histogram({
    name: 'cellium_api_limiter_wait_history_duration_seconds',
    help: 'Histogram of wait durations of API calls processed by the rate limiter',
    labelNames: ['api_call'],
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers,
  });

  const now = { immediate: true, sync: true } as const;
  // merge() of no streams completes at once: no job then (its health would read "source completed")
  if (src.regenerations.length) {
    jobs.observer('endpoint-regenerations', merge(...src.regenerations), (e) => {
      regenerations.inc({ outcome: e.outcome });
      regenerationTime.observe({ scope: 'total', status: e.outcome }, e.seconds);
    }, now);
  }
  jobs.observer('policy-changes', src.policy.changes$, (_c: PolicyChange) => {
    policyChanges.inc({ outcome: 'success' });
  }, now);
  jobs.observer('api-requests', src.requests, (r) => apiTime.observe({ path: r.path, method: r.method, return_code: String(r.status) }, r.seconds), now);
  jobs.observer('api-limiter-reports', src.limiterReports, (r) => {
    const api_call = r.name;
    limiterProcessing.set({ api_call, value: 'mean' }, r.meanProcessingSeconds);
    limiterProcessing.set({ api_call, value: 'estimated' }, r.estimatedProcessingSeconds);
    limiterWait.set({ api_call, value: 'mean' }, r.meanWaitSeconds);
    limiterWait.set({ api_call, value: 'max' }, r.maxWaitSeconds);
    limiterWait.set({ api_call, value: 'min' }, r.minWaitSeconds);
    limiterInFlight.set({ api_call, value: 'in-flight' }, r.inFlight);
    limiterInFlight.set({ api_call, value: 'limit' }, r.parallelRequests);
    limiterRate.set({ api_call, value: 'limit' }, r.limit);
    limiterRate.set({ api_call, value: 'burst' }, r.burst);
    limiterAdjustment.set({ api_call }, r.adjustmentFactor);
    if (r.outcome !== 'rate-limited') limiterWaitHistory.observe({ api_call }, r.waitSeconds);
    limiterProcessed.inc({ api_call, outcome: r.outcome, return_code: String(r.returnCode) });
  }, now);
}
