/**
 * The endpoint-audit cell's wiring: its module, config, one provider with named dependencies, and
 * one observer job per stream it follows (index.ts is its public face).
 */
import { merge, map } from 'rxjs';
import { config, invoke, module, provide, token, HealthToken, JobsToken, LoggerToken, type DepsValues } from '../../../src/hive/index.js';
import { EndpointManagerToken } from '../../../src/cells/endpoint/index.js';
import { AuditConfigToken, auditConfigSchema } from './config.js';
import { EndpointAudit } from './audit.js';

/** Token other cells (and embedders) inject to read the audit. */
export const EndpointAuditToken = token<EndpointAudit>('EndpointAudit');

/** What the audit needs, by name: written once, its type derived from it. */
const auditDeps = { cfg: AuditConfigToken, endpoints: EndpointManagerToken, jobs: JobsToken, health: HealthToken, log: LoggerToken } as const;

/**
 * Builds the audit and follows the endpoint manager's streams as a job: named (`cellium-agent
 * hive` lists it), with a health node of its own, unsubscribed when the hive stops. `immediate`
 * because endpoints restored by a start hook must be seen too; `sync` so the event is recorded
 * when the manager's `next` returns.
 */
function newAudit({ cfg, endpoints, jobs, health, log }: DepsValues<typeof auditDeps>): EndpointAudit {
  const audit = new EndpointAudit(cfg.endpointAuditSize);
  const events$ = merge(
    endpoints.created$.pipe(map((ep) => ['created', ep] as const)),
    endpoints.restored$.pipe(map((ep) => ['restored', ep] as const)),
    endpoints.deleted$.pipe(map((ep) => ['deleted', ep] as const)),
  );
  jobs.observer('endpoint-events', events$, ([kind, ep]) => {
    audit.record(kind, ep);
    health.ok(`${audit.events().length} events kept (at most ${cfg.endpointAuditSize})`);
  }, { immediate: true, sync: true });
  health.ok('no endpoint events yet');
  log.debug({ size: cfg.endpointAuditSize }, 'endpoint audit ready');
  return audit;
}

/** The endpoint-audit cell: add it to a hive beside the agent's cells (or with a mocked EndpointManager). */
export const endpointAuditCell = module(
  'endpoint-audit',
  'Keeps the last endpoint lifecycle events',
  config(AuditConfigToken, auditConfigSchema),
  provide(EndpointAuditToken, newAudit, auditDeps),
  // constructed at populate even if no other cell injects it
  invoke('endpoint-audit', (_a: EndpointAudit) => undefined, EndpointAuditToken),
);
