/** The endpoint cell's wiring: its module, providers and what they are built from (index.ts is its public face). */
import { merge, map } from 'rxjs';
import { config, invoke, module, provide, providePrivate, type DepsValues } from '../../hive/cell.js';
import { ControllerManagerToken } from '../../hive/controller/manager.js';
import { HealthToken, type Health } from '../../hive/health.js';
import { JobsToken, type Jobs } from '../../hive/jobs.js';
import { LifecycleToken } from '../../hive/lifecycle.js';
import { LoggerToken } from '../../hive/logger.js';
import { token } from '../../hive/token.js';
import { DatapathToken, LinkCheckerToken } from '../../datapath/types.js';
import { IdentityAllocatorToken } from '../identity/types.js';
import { IPAMToken } from '../ipam/types.js';
import { NamedPortMapToken, PolicyRepositoryToken, PolicyRestoreToken, type NamedPortMap } from '../policy/types.js';
import { StateDirConfigToken, type StateDirConfig } from '../statedir/index.js';
import { EndpointAPIManagerImpl } from './api-manager.js';
import { EndpointConfigToken, endpointConfigSchema } from './config.js';
import { DefaultEndpointCreator, EndpointCreatorToken } from './creator.js';
import { gcRound } from './gc.js';
import type { Endpoint } from './endpoint.js';
import { asEndpoint, EndpointManagerImpl } from './manager.js';
import { endpointAddresses, endpointOwner, Regenerator, type RegenerationOutcome } from './regeneration.js';
import { EndpointRestorer } from './restore.js';
import { isTerminating } from './state.js';
import { EndpointStateStore } from './state-store.js';
import { EndpointAPIManagerToken, EndpointCreationHooksToken, EndpointManagerToken, PodLabelSourcesToken } from './types.js';

/** Token for the EndpointManager implementation (lookups by container, restore, conflict checks). */
export const EndpointManagerImplToken = token<EndpointManagerImpl>('EndpointManagerImpl');
/** Token for the endpoint state directory. */
export const EndpointStateStoreToken = token<EndpointStateStore>('EndpointStateStore');
/** Token for the restorer (`done` settles once restored endpoints were regenerated). */
export const EndpointRestorerToken = token<EndpointRestorer>('EndpointRestorer');
const RegeneratorToken = token<Regenerator>('EndpointRegenerator');

/** What the regenerator works with. */
const regeneratorDeps = {
  identities: IdentityAllocatorToken,
  policy: PolicyRepositoryToken,
  namedPorts: NamedPortMapToken,
  datapath: DatapathToken,
  ipam: IPAMToken,
  store: EndpointStateStoreToken,
  controllers: ControllerManagerToken,
  log: LoggerToken,
} as const;

/** Builds the regenerator (identities, policy, datapath, IPAM and the state directory). */
function newRegenerator(d: DepsValues<typeof regeneratorDeps>): Regenerator {
  return new Regenerator(d);
}

/** Everything the manager's lifecycle and jobs need. */
const managerDeps = {
  regenerator: RegeneratorToken,
  datapath: DatapathToken,
  cfg: EndpointConfigToken,
  policy: PolicyRepositoryToken,
  namedPorts: NamedPortMapToken,
  linkExists: LinkCheckerToken,
  lc: LifecycleToken,
  jobs: JobsToken,
  health: HealthToken,
  log: LoggerToken,
} as const;

/** What changes the module's health: a regeneration's outcome, an endpoint added or deleted. */
type HealthEvent = { readonly kind: 'outcome'; readonly outcome: RegenerationOutcome } | { readonly kind: 'added' } | { readonly kind: 'deleted'; readonly endpointId: number };

/**
 * Reports the module's health: degraded while any endpoint's last regeneration failed. An observer
 * job subscribed at construction and handling inside `next`, so the endpoints restored by the start
 * hook count and the health is current as soon as an endpoint was added or deleted.
 */
function reportHealth(m: EndpointManagerImpl, regenerator: Regenerator, jobs: Jobs, health: Health): void {
  const failing = new Map<number, string>();
  const update = (): void => {
    if (failing.size === 0) health.ok(`${m.size} endpoints`);
    else health.degraded(`${failing.size} of ${m.size} endpoints failed to regenerate: ${[...failing.entries()].slice(0, 5).map(([id, e]) => `${id}: ${e}`).join('; ')}`);
  };
  const events$ = merge(
    regenerator.outcomes$.pipe(map((outcome): HealthEvent => ({ kind: 'outcome', outcome }))),
    merge(m.created$, m.restored$).pipe(map((): HealthEvent => ({ kind: 'added' }))),
    m.deleted$.pipe(map((ep): HealthEvent => ({ kind: 'deleted', endpointId: ep.id }))),
  );
  jobs.observer('endpoint-health', events$, (e) => {
    if (e.kind === 'outcome') {
      if (e.outcome.ok) failing.delete(e.outcome.endpointId);
      else failing.set(e.outcome.endpointId, e.outcome.error ?? 'failed');
    } else if (e.kind === 'deleted') {
      failing.delete(e.endpointId);
    }
    update();
  }, { immediate: true, sync: true });
  update();
}

/**
 * Keeps this node's endpoints in the named-port map: a restored endpoint with its identity as soon
 * as it is exposed (before any restored endpoint regenerates, so egress names resolve against all
 * of them), a deleted one removed. Regeneration records the rest (new endpoints, identity and port
 * changes).
 */
function feedNamedPorts(m: EndpointManagerImpl, jobs: Jobs, map: NamedPortMap): void {
  jobs.observer('endpoint-named-ports-restored', m.restored$, (view) => {
    const ep = asEndpoint(view);
    if (ep.securityIdentity) map.upsert(endpointOwner(ep.id), ep.securityIdentity.id, ep.namedPorts, endpointAddresses(ep));
  }, { immediate: true, sync: true });
  jobs.observer('endpoint-named-ports-deleted', m.deleted$, (ep) => map.remove(endpointOwner(ep.id)), { immediate: true, sync: true });
}

/** Builds the manager with its stop hook, its health and its GC, periodic and policy-change jobs. */
function newManager(d: DepsValues<typeof managerDeps>): EndpointManagerImpl {
  const m = new EndpointManagerImpl(d.regenerator, d.log);
  reportHealth(m, d.regenerator, d.jobs, d.health);
  feedNamedPorts(m, d.jobs, d.namedPorts);
  d.lc.append({
    name: 'endpoint-manager',
    onStop: async () => {
      await Promise.all(m.list().map((ep) => ep.shutdown('agent stopping')));
      m.close();
    },
  });
  d.jobs.timer('endpoint-gc', async () => {
    await gcRound(m, d.linkExists, d.log);
  }, d.cfg.endpointGcInterval);
  d.jobs.timer('endpoint-periodic-regeneration', () => m.regenerateAll('periodic endpoint regeneration'), d.cfg.endpointRegenInterval);
  const programLost = (ep: Endpoint, why: string): void => {
    if (isTerminating(ep.storedState)) return;
    d.regenerator.programLost(ep, why);
    ep.regenerate('datapath program missing from its interface', 'rewrite+load').catch((err: Error) => {
      if (!ep.signal.aborted) d.log.warn({ endpointID: ep.id, err: err.message }, 'reloading a missing endpoint program failed');
    });
  };
  if (d.datapath.programsLost$) {
    d.jobs.observer('endpoint-programs-lost', d.datapath.programsLost$, (lost) => {
      const ep = m.lookup(String(lost.endpointId));
      if (ep) programLost(ep, lost.why);
    });
  }
  m.programCheck = async (ep) => {
    const why = await d.datapath.loader.checkAttached(ep.id);
    if (why) programLost(ep, why);
    return why;
  };
  d.jobs.observer('endpoint-policy-updates', d.policy.changes$, (change) => {
    const affected = m.withIdentities(change.affected);
    const skip = new Set(affected);
    for (const ep of m.list()) if (!skip.has(ep)) ep.bumpPolicyRevision(change.revision);
    for (const ep of affected) {
      ep.regenerate(`policy change (revision ${change.revision})`, 'no-rebuild').catch((err: Error) => {
        if (!ep.signal.aborted) d.log.warn({ endpointID: ep.id, err: err.message }, 'regeneration after a policy change failed');
      });
    }
  });
  return m;
}

/** What the restorer works with. */
const restorerDeps = {
  store: EndpointStateStoreToken,
  m: EndpointManagerImplToken,
  linkExists: LinkCheckerToken,
  identities: IdentityAllocatorToken,
  policy: PolicyRestoreToken,
  datapath: DatapathToken,
  lc: LifecycleToken,
  log: LoggerToken,
} as const;

/**
 * Builds the restorer and restores endpoints at start: after identities, IPAM and the datapath started (the regenerator needs IPAM; restore hands the datapath the restored endpoints), and after
 * the stored policy is back (it depends on PolicyRestoreToken, so the policy-restore hook comes
 * first, and it waits for `done` before restoring anything).
 */
function newRestorer(d: DepsValues<typeof restorerDeps>): EndpointRestorer {
  const r = new EndpointRestorer(d.store, d.m, d.linkExists, d.identities, d.policy.done, d.datapath, d.log);
  d.lc.append({
    name: 'endpoint-restore',
    onStart: async () => {
      await r.restore();
    },
  });
  return r;
}

/** What the endpoint API manager works with. */
const apiManagerDeps = {
  creator: EndpointCreatorToken,
  m: EndpointManagerImplToken,
  log: LoggerToken,
  restorer: EndpointRestorerToken,
  podLabels: PodLabelSourcesToken,
  hooks: EndpointCreationHooksToken,
} as const;

/** Builds the endpoint API manager (creates, patches and deletes endpoints for the API and CNI). */
function newApiManager(d: DepsValues<typeof apiManagerDeps>): EndpointAPIManagerImpl {
  return new EndpointAPIManagerImpl(d.creator, d.m, d.log, d.restorer.exposed, d.podLabels, d.hooks);
}

/** The endpoint cell. */
export const endpointCell = module(
  'endpoint',
  'Endpoints: creation, management, regeneration, restore',
  config(EndpointConfigToken, endpointConfigSchema),
  provide(EndpointStateStoreToken, (sd: StateDirConfig) => new EndpointStateStore(sd.stateDir), StateDirConfigToken),
  providePrivate(RegeneratorToken, newRegenerator, regeneratorDeps),
  provide(EndpointManagerImplToken, newManager, managerDeps),
  provide(EndpointRestorerToken, newRestorer, restorerDeps),
  provide(EndpointManagerToken, (m: EndpointManagerImpl) => m, EndpointManagerImplToken),
  provide(EndpointCreatorToken, DefaultEndpointCreator),
  provide(EndpointAPIManagerToken, newApiManager, apiManagerDeps),
  invoke('endpoint-restore', (_r: EndpointRestorer) => undefined, EndpointRestorerToken),
);
